"""The x86 typed micro-kernels (AVX512-BF16, AVX512-FP16, AVX512-VNNI, AMX) run here,
on a CPU without AVX-512 or AMX, with their intrinsics emulated in portable C
(tests/x86emul/immintrin.h, written from the SDM's Operation sections): the generated
kernel, the real driver (typed packing, its fast paths, the AMX tile configuration
once per thread) and the L1 timing's entry points, through the whole edge catalogue
against the float64 reference. What this does not prove is the hardware's reading of
the same intrinsics: the device run (``bash bench/device_cpu.sh types``) does that.
A negative control shows the emulation catches a driver that never loads the tile
configuration."""
from __future__ import annotations

import functools
import pathlib
import platform

import numpy as np
import pytest

from microkernel import build, kernel, registry, validate
from microkernel.tile import TileSpec

pytestmark = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                                reason="the emulated kernels are x86 C (inline asm free)")
EMUL = pathlib.Path(__file__).resolve().parent / "x86emul"
NEW_ISAS = ("avx512bf16", "avx512fp16", "avx512vnni", "amx")
TILES = sorted({s.name for s in registry.BUILTIN + registry.DEVICE_TYPED if s.isa in NEW_ISAS}
               | {"amx_bf16_8x32", "amx_s8s8_16x48", "avx512vnni_u8s8_4x48_u2"})


@functools.lru_cache(maxsize=None)
def emulated(name: str, source_edit=None) -> kernel.Kernel:
    """``name``'s kernel module built without ISA flags against the emulation header
    (``source_edit``: (old, new) replaced once in the module source)."""
    spec = TileSpec.from_name(name)
    src = kernel.module_source(spec)
    if source_edit is not None:
        assert source_edit[0] in src
        src = src.replace(source_edit[0], source_edit[1], 1)
    src += "\nint mk_emu_faults_c(void) { return mk_emu_faults(); }\n"
    c_src = build.c_src_dir()
    mod = build.load_module(
        f"emu_{name}", kernel.CDEF_TYPED + "int mk_emu_faults_c(void);\n", src,
        cflags=kernel.COMMON_CFLAGS, include_dirs=(str(EMUL), str(c_src)),
        ldflags=("-fopenmp",),
        depends=[c_src / f for f in build.DRIVER_FILES + ("timing.c",)] + [EMUL / "immintrin.h"])
    return kernel.Kernel(spec, mod)


def test_the_emulated_module_has_no_avx512_or_amx_instruction():
    """Built without ISA flags: its object runs here (objdump shows no zmm, no tmm)."""
    import re
    import shutil
    import subprocess
    if not shutil.which("objdump"):
        pytest.skip("objdump missing")
    k = emulated("amx_bf16_32x32")
    text = subprocess.run(["objdump", "-d", k.module.__file__], capture_output=True,
                          text=True).stdout
    assert len(text) > 1000
    assert not re.search(r"%zmm|%tmm|tdpbf16ps|tileloadd", text)


@pytest.mark.parametrize("name", TILES)
def test_edge_catalogue_on_the_emulated_kernel(name):
    k = emulated(name)
    results = validate.run_catalogue(k)
    bad = [(r.case.label, r.detail) for r in results if not r.ok]
    assert not bad, bad[:5]
    assert len(results) > 50
    assert k.lib.mk_emu_faults_c() == 0


@pytest.mark.parametrize("name", ["amx_bf16_32x32", "amx_u8s8_32x32", "avx512bf16_8x32",
                                  "avx512fp16_8x64", "avx512vnni_u8s8_8x32"])
def test_timing_and_peak_entry_points_run_emulated(name):
    """The L1 timing (MK_THREAD_SETUP, the hot entry point) and the peak loop (its own
    tile configuration: four C tiles of the 32x32 shape) execute without a fault."""
    k = emulated(name)
    assert k.lib.mk_time_ukernel(128, 2) > 0
    flops = k.ffi.new("double *")
    assert k.lib.mk_fma_peak(3, flops) > 0
    per = {"amx_bf16_32x32": 4 * 16 * 16 * 32 * 2, "amx_u8s8_32x32": 4 * 16 * 16 * 64 * 2,
           "avx512bf16_8x32": 16 * 64, "avx512fp16_8x64": 16 * 64,
           "avx512vnni_u8s8_8x32": 16 * 128}[name]
    assert flops[0] == 3 * per
    assert k.lib.mk_emu_faults_c() == 0


def test_large_k_and_strided_operands_emulated():
    """Several KC blocks (beta' = 1 after the first: the AMX kernel loads C into its
    tiles) and transposed / strided operands (the generic packing beside the fast
    paths), integers exact."""
    rng = np.random.default_rng(5)
    for name, at, bt in (("amx_u8s8_32x32", np.uint8, np.int8), ("amx_bf16_32x32", None, None)):
        k = emulated(name)
        m, n, kk = 70, 50, 700
        if at is None:
            import ml_dtypes
            A = rng.uniform(-1, 1, (kk, m)).astype(ml_dtypes.bfloat16).T
            B = rng.uniform(-1, 1, (kk, 2 * n)).astype(ml_dtypes.bfloat16)[:, ::2]
            C0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
            alpha, beta = 1.0, 1.0
        else:
            A = rng.integers(0, 256, (m, kk)).astype(at)
            B = rng.integers(-128, 128, (kk, n)).astype(bt)
            C0 = rng.integers(-99, 99, (m, n)).astype(np.int32)
            alpha, beta = 1, 1
        C = C0.copy()
        from microkernel import gemm
        gemm(A, B, C, alpha=alpha, beta=beta, kernel=k, blocking={"kc": 128})
        ref, bound = validate.reference(A, B, C0, alpha, beta, k.spec.types)
        ok, _, _, detail = validate.check(C, ref, bound)
        assert ok, (name, detail)
        assert k.lib.mk_emu_faults_c() == 0


def test_negative_control_a_driver_without_the_tile_configuration_fails():
    """The same AMX module with MK_THREAD_SETUP emptied: the driver's hot calls run on
    an unconfigured tile state, which the emulation reports (as hardware would #UD)."""
    k = emulated("amx_bf16_32x32", ("#define MK_THREAD_SETUP() mk_amx_config_amx_bf16_32x32()",
                                    "#define MK_THREAD_SETUP() ((void)0)"))
    import ml_dtypes
    A = np.ones((32, 64), ml_dtypes.bfloat16)
    B = np.ones((64, 32), ml_dtypes.bfloat16)
    from microkernel import gemm
    C = gemm(A, B, kernel=k)
    assert k.lib.mk_emu_faults_c() > 0
    assert not np.array_equal(C, np.full((32, 32), 64.0, np.float32))


def test_one_thread_amx_gemm_goes_through_the_whole_ir_loop():
    """At one thread with K over several KC blocks, gemm() runs the AMX module's
    whole-ir-loop entry point (MK_UKERNEL_IRLOOP, c_src/mk_cstat.h): the same module with
    that function's store of its first C tile left out gives a wrong C there, while the
    team's loops at two threads (one micro-kernel call per tile) still give the right
    one, and so does the intact module at one thread."""
    import ml_dtypes
    from microkernel import gemm
    rng = np.random.default_rng(11)
    A = rng.uniform(-1, 1, (100, 600)).astype(ml_dtypes.bfloat16)
    B = rng.uniform(-1, 1, (600, 130)).astype(ml_dtypes.bfloat16)
    ref, bound = validate.reference(A, B, np.zeros((100, 130), np.float32), 1.0, 0.0, "bf16")
    broken = emulated("amx_bf16_32x32", ("_tile_stored(0, cq + 0, 128);", "(void)cq;"))
    blk = {"kc": 64, "mc": 64, "nc": 64}
    assert not validate.check(gemm(A, B, kernel=broken, threads=1, blocking=blk), ref, bound)[0]
    assert validate.check(gemm(A, B, kernel=broken, threads=2, blocking=blk), ref, bound)[0]
    intact = emulated("amx_bf16_32x32")
    assert validate.check(gemm(A, B, kernel=intact, threads=1, blocking=blk), ref, bound)[0]
    assert broken.lib.mk_emu_faults_c() == 0 and intact.lib.mk_emu_faults_c() == 0


def test_the_one_thread_amx_blocking_is_chosen_by_threads_depth_and_source(tmp_path):
    """gemm.blocking_for: one thread at K >= CSTAT_MIN_K of an AMX module with the
    whole-ir-loop entry point gets the C-stationary model (a KC whose B micro-panel is a
    third of this machine's L1); more threads, a shallower K, or a user's source without
    MK_UKERNEL_IRLOOP get the tile-register model (KC = 4096 bytes of an A row)."""
    from microkernel.blocking import CSTAT_MIN_K
    from microkernel.gemm import blocking_for
    from microkernel.probe import probe
    k = emulated("amx_bf16_32x32")
    l1 = next(c for c in probe().caches if c.level == 1 and c.type in ("Data", "Unified"))
    third = l1.ways * l1.sets * l1.line_bytes // 3
    small = blocking_for(k, 1, CSTAT_MIN_K)
    assert small.kc == third // (32 * 2) // 32 * 32 and small.kc < 2048
    for threads, depth in ((2, 4096), (None, 4096), (1, CSTAT_MIN_K - 1)):
        assert blocking_for(k, threads, depth).kc == 2048, (threads, depth)
    src = tmp_path / "mine.c"
    src.write_text("/* a micro-kernel without the whole-ir-loop entry point */\n")
    assert blocking_for(kernel.Kernel(k.spec, k.module, str(src)), 1, 4096).kc == 2048
    src.write_text("#define MK_UKERNEL_IRLOOP mine_irloop\n")     # no C-stationary loops
    assert blocking_for(kernel.Kernel(k.spec, k.module, str(src)), 1, 4096).kc == 2048
    src.write_text("#define MK_UKERNEL_IRLOOP mine_irloop\n#define MK_C_STATIONARY 1\n")
    assert blocking_for(kernel.Kernel(k.spec, k.module, str(src)), 1, 4096).kc == small.kc
    # what gemm() hands the C driver: the model's blocking of the call, overrides on it
    import importlib
    gemm_mod = importlib.import_module("microkernel.gemm")   # the module, not the function
    assert gemm_mod._driver(k, None, 1, 4096)[2].kc == small.kc
    assert gemm_mod._driver(k, None, 1, CSTAT_MIN_K - 1)[2].kc == 2048
    assert gemm_mod._driver(k, None, 2, 4096)[2].kc == 2048
    over = gemm_mod._driver(k, {"mc": 64}, 1, 4096)[2]
    assert (over.kc, over.mc, over.nc) == (small.kc, 64, small.nc)
    assert gemm_mod._driver(k, {"mc": 64}, 2, 4096)[2].kc == 2048
    # a packed B past the driver's bound for the C-stationary loops (1 GiB: 2^17 columns
    # of 4096 bf16, and 16 bytes of slack) runs the BLIS loops, so it keeps their blocking
    assert gemm_mod._driver(k, None, 1, 4096, (1 << 17) - 2048)[2].kc == small.kc  # 98.4%
    assert gemm_mod._driver(k, None, 1, 4096, 1 << 17)[2].kc == 2048
    assert gemm_mod._driver(k, None, 1, 4096, 1 << 18)[2].kc == 2048
    assert blocking_for(k, 1, 4096, 1 << 18).kc == 2048
    assert gemm_mod._driver(k, {"mc": 64}, 1, 4096, 1 << 18)[2].kc == 2048


def test_the_cstat_bound_and_packed_b_bytes_match_the_c_driver():
    """blocking.CSTAT_MAX_B is c_src/mk_cstat.h's MK_CSTAT_MAX_B, and cstat_b_bytes is
    mk_cstat_bytes' B part, worked out by hand for amx_bf16_32x32 (NR = 32, K group 32,
    2-byte panels): n = 100 -> 128 columns, k = 100 -> 128, (128 * 128 + 8) * 2 = 32784
    bytes, rounded up to 64: 32832."""
    import re
    from microkernel.blocking import CSTAT_MAX_B, cstat_b_bytes
    text = (pathlib.Path(__file__).resolve().parents[1] / "c_src" / "mk_cstat.h").read_text()
    m = re.search(r"#define MK_CSTAT_MAX_B \(\(size_t\)1 << (\d+)\)", text)
    assert m and CSTAT_MAX_B == 1 << int(m.group(1))
    spec = emulated("amx_bf16_32x32").spec
    assert cstat_b_bytes(spec, 100, 100) == 32832
    assert cstat_b_bytes(spec, 1 << 17, 4096) == (1 << 30) + 64      # the slack's 16 bytes


def test_one_thread_amx_gemm_at_a_deep_k_runs_the_whole_ir_loop_by_default():
    """With no blocking given, a one-thread AMX call of K >= CSTAT_MIN_K goes through the
    whole-ir-loop entry point: the module whose irloop drops its first C tile's store
    gives a wrong C, the intact one the right C."""
    import ml_dtypes
    from microkernel import gemm
    from microkernel.blocking import CSTAT_MIN_K
    rng = np.random.default_rng(12)
    A = rng.uniform(-1, 1, (40, CSTAT_MIN_K + 37)).astype(ml_dtypes.bfloat16)
    B = rng.uniform(-1, 1, (CSTAT_MIN_K + 37, 36)).astype(ml_dtypes.bfloat16)
    ref, bound = validate.reference(A, B, np.zeros((40, 36), np.float32), 1.0, 0.0, "bf16")
    broken = emulated("amx_bf16_32x32", ("_tile_stored(0, cq + 0, 128);", "(void)cq;"))
    assert not validate.check(gemm(A, B, kernel=broken, threads=1), ref, bound)[0]
    intact = emulated("amx_bf16_32x32")
    assert validate.check(gemm(A, B, kernel=intact, threads=1), ref, bound)[0]
