"""The x86 typed ISAs (issue 21) on a machine that runs none of them: every new tile
compiles, its inner loop is made of its instruction (counted by microkernel.analysis
as the loop's FMAs), the probe refuses it with IsaUnavailableError naming the ISA
(never SIGILL), and the injected-CPUID decoder reports each new flag only with its
OS state. Expected counts come from the tile's shape and the SDM's bit positions,
written here, never from the code under test. (The kernels run, emulated, in
tests/test_x86_emulated.py.)"""
from __future__ import annotations

import importlib
import platform
import re

import numpy as np
import pytest

import microkernel as mk
from microkernel import kernel, registry
from microkernel.dispatch import IsaUnavailableError
from microkernel.tile import ISAS, TileError, TileSpec, register_budget

IS_X86 = platform.machine().lower() in ("x86_64", "amd64")
mp = importlib.import_module("microkernel.probe")
USABLE = set(mk.probe().isas)
NEW = ("avx512bf16", "avx512fp16", "avx512vnni", "amx")
TILES = list(dict.fromkeys(s for s in registry.BUILTIN + registry.DEVICE_TYPED if s.isa in NEW))

# -- names, budgets, the AMX tile configuration ------------------------------------------


@pytest.mark.parametrize("name,isa,types,mr,nr", [
    ("amx_bf16_32x32", "amx", "bf16", 32, 32), ("amx_u8s8_32x32", "amx", "u8s8", 32, 32),
    ("avx512bf16_8x32", "avx512bf16", "bf16", 8, 32),
    ("avx512fp16_8x64", "avx512fp16", "f16h", 8, 64),
    ("avx512vnni_u8s8_8x32", "avx512vnni", "u8s8", 8, 32)])
def test_names_of_the_issue_round_trip(name, isa, types, mr, nr):
    s = TileSpec.from_name(name)
    assert (s.isa, s.types, s.mr, s.nr, s.name) == (isa, types, mr, nr, name)


@pytest.mark.parametrize("name,match", [
    ("amx_32x32", "name their input types"),                 # amx implies none
    ("avx512vnni_8x32", "name their input types"),
    ("avx512bf16_bf16_8x32", "without saying so"),          # implied types not written
    ("amx_f16_32x32", "take the input types bf16, s8s8, u8s8, u8u8"),
    ("avx512vnni_bf16_8x32", "take the input types u8s8, s8s8, u8u8"),
    ("amx_bf16_16x64", "needs 9 tile registers"),            # 4 C + 1 A + 4 B
    ("amx_bf16_64x32", "needs 14 tile registers"),           # 8 C + 4 A + 2 B
    ("amx_bf16_24x32", "at most 16"),
    ("avx512fp16_8x48", "multiple of its 32"),
])
def test_bad_names_and_budgets_are_refused(name, match):
    with pytest.raises(TileError, match=match):
        TileSpec.from_name(name)


@pytest.mark.parametrize("name,c,a,b", [("amx_bf16_32x32", 4, 2, 2), ("amx_s8s8_16x48", 3, 1, 3),
                                        ("amx_bf16_8x32", 2, 1, 2), ("amx_u8u8_48x16", 3, 3, 1)])
def test_amx_budget_counts_tile_registers(name, c, a, b):
    bud = register_budget(TileSpec.from_name(name))
    assert (bud.accumulators, bud.broadcasts, bud.b_vectors, bud.available) == (c, a, b, 8)
    assert bud.needed == c + a + b <= 8
    assert bud.hides_fma_latency == (c >= 4)


@pytest.mark.parametrize("name,temporaries,needed", [
    ("avx2_s8s8_4x16", 1, 8 + 2 + 1 + 1),            # vpmaddwd's product
    ("avx512_u8u8_8x32", 1, 16 + 2 + 1 + 1),
    ("avx512vnni_u8s8_8x32", 0, 16 + 2 + 1),          # vpdpbusd accumulates in place
    ("avx512vnni_s8s8_8x32", 0, 16 + 2 + 1),          # B's column sums come packed
    ("avx512vnni_u8u8_12x32", 0, 24 + 2 + 1),
    ("avx2_4x24", 0, 12 + 3 + 1)])
def test_budget_counts_the_registers_of_the_instruction_form(name, temporaries, needed):
    bud = register_budget(TileSpec.from_name(name))
    assert (bud.temporaries, bud.needed) == (temporaries, needed)


@pytest.mark.parametrize("name,match", [
    ("avx2_s8s8_4x24", r"needs 17 vector registers \(12 accumulators \+ 3 B vectors \+ 1 "
                       r"broadcast \+ 1 for the instruction form\) but avx2 has 16"),
    ("avx512_s8s8_15x32", "needs 34 vector registers")])   # 30 + 2 + 1 + the product
def test_a_tile_whose_instruction_form_does_not_fit_is_refused(name, match):
    with pytest.raises(TileError, match=match):
        TileSpec.from_name(name)


def test_amx_tile_configuration_is_generated_from_the_spec():
    from microkernel.codegen.amx import tile_config
    assert tile_config(TileSpec.from_name("amx_bf16_32x32")) == [(16, 64)] * 8
    # 8 rows: C tiles (0, 1) and the A tile (2) have 8 rows, B tiles (3, 4) 16 rows of pairs
    assert tile_config(TileSpec.from_name("amx_bf16_8x32")) == (
        [(8, 64)] * 3 + [(16, 64)] * 2 + [(0, 0)] * 3)
    src = mk.codegen.generate(TileSpec.from_name("amx_bf16_8x32"))
    assert "{1, 0, {0}, {64, 64, 64, 64, 64, 0, 0, 0}, {8, 8, 8, 16, 16, 0, 0, 0}}" in src


def test_typed_defaults_put_the_new_instructions_first():
    d = registry.TYPED_DEFAULTS
    assert d["bf16"][:2] == ("amx_bf16_32x32", "avx512bf16_8x32")
    assert d["u8s8"][:2] == ("amx_u8s8_32x32", "avx512vnni_u8s8_8x32")
    assert d["s8s8"][0] == "amx_s8s8_32x32" and d["u8u8"][0] == "amx_u8u8_32x32"
    assert all(names[-1].startswith("scalar_") for names in d.values())


def test_isas_order_and_flags():
    names = list(ISAS)
    assert names.index("avx512bf16") > names.index("sve")      # after the fp32 ones
    assert [n for n in names if n in NEW] == list(NEW)
    base = set(ISAS["avx512"].cflags)
    own = {"avx512bf16": {"-mavx512bf16"}, "avx512fp16": {"-mavx512fp16"},
           "avx512vnni": {"-mavx512vnni"}, "amx": {"-mamx-tile", "-mamx-bf16", "-mamx-int8"}}
    for isa, flags in own.items():
        assert set(ISAS[isa].cflags) == base | flags, isa


# -- compile, disassemble, count --------------------------------------------------------

#: the instruction each tile's K loop is made of (Intel SDM vol. 2 mnemonics)
INSN = {"avx512bf16": r"vdpbf16ps", "avx512fp16": r"vfmadd\d{3}ph",
        "avx512vnni": r"vpdpbusd\b", "amx": r"tdp(bf16ps|bssd|busd|buud)"}
TDP = {"bf16": "tdpbf16ps", "s8s8": "tdpbssd", "u8s8": "tdpbusd", "u8u8": "tdpbuud"}


def _per_step(spec):
    """(multiply-adds, flops, vector loads, broadcasts, tile loads) one k step of the
    generated kernel does: zmm instructions of 16 fp32/int32 lanes (32 fp16), 2, 4 or 1
    products per lane; AMX: a 16 x 16 tile product per C tile over 32 bf16 / 64 int8 of
    K, one tile load per A and B tile."""
    if spec.isa == "amx":
        c, a, b = (-(-spec.mr // 16)) * (spec.nr // 16), -(-spec.mr // 16), spec.nr // 16
        depth = 32 if spec.types == "bf16" else 64
        return c, 2 * 256 * depth * c, 0, 0, a + b
    lanes = 32 if spec.isa == "avx512fp16" else 16
    depth = {"avx512bf16": 2, "avx512fp16": 1, "avx512vnni": 4}[spec.isa]
    nv = spec.nr // lanes
    return spec.mr * nv, 2 * spec.mr * spec.nr * depth, nv, spec.mr, 0


@pytest.mark.skipif(not IS_X86, reason="x86-64 host")
@pytest.mark.parametrize("spec", TILES, ids=[s.name for s in TILES])
def test_compiles_and_the_loop_is_made_of_its_instruction(spec):
    from microkernel.analysis import disassemble, inner_loop
    assert kernel.compile_only(spec).exists()
    asm = disassemble(spec)
    mnemonics = re.findall(r"^\s*[0-9a-f]+:\s+(\S+)", asm, re.MULTILINE)
    ours = [m for m in mnemonics if re.fullmatch(INSN[spec.isa], m)]
    assert ours, f"no {INSN[spec.isa]} in {spec.name}"
    if spec.isa == "amx":
        assert set(ours) == {TDP[spec.types]}
        assert {"ldtilecfg", "tilerelease", "tileloadd", "tilestored"} <= set(mnemonics)
    loop = inner_loop(asm, spec.k_unroll)
    fmas, flops, vloads, bcasts, tloads = _per_step(spec)
    ku = spec.k_unroll
    assert loop.fmas == fmas * ku
    assert loop.flops == flops * ku
    assert loop.vector_loads == vloads * ku
    assert loop.broadcasts == bcasts * ku
    assert loop.tile_loads == tloads * ku
    assert loop.spills == 0


@pytest.mark.skipif(not IS_X86, reason="x86-64 host")
def test_asm_command_no_measure_on_amx(capsys):
    from microkernel.cli import main
    assert main(["asm", "amx_bf16_32x32", "--no-measure", "--json"]) == 0
    import json
    rep = json.loads(capsys.readouterr().out)
    assert rep["loop"]["per_k"]["fmas"] == 4 and rep["loop"]["per_k"]["tile_loads"] == 4
    assert rep["expected"]["fmas_per_k"] == 4 and rep["expected"]["tile_loads_per_k"] == 4
    assert rep["register_budget"]["needed"] == 8 and rep["register_budget"]["available"] == 8
    assert rep["measured"]["runnable"] is (rep["isa"] in USABLE)


# -- the probe refuses what it has not cleared --------------------------------------------

@pytest.mark.parametrize("spec", TILES, ids=[s.name for s in TILES])
def test_probe_refuses_tiles_this_cpu_cannot_run(spec):
    if spec.isa in USABLE:
        pytest.skip(f"{spec.isa} runs here")
    with pytest.raises(IsaUnavailableError, match=rf"needs {spec.isa}\b"):
        mk.get_kernel(spec.name)


def test_gemm_with_a_refused_kernel_raises_and_the_default_falls_back():
    import ml_dtypes
    A = np.ones((5, 6), ml_dtypes.bfloat16)
    B = np.ones((6, 7), ml_dtypes.bfloat16)
    if "amx" not in USABLE:
        with pytest.raises(IsaUnavailableError, match="amx"):
            mk.gemm(A, B, kernel="amx_bf16_32x32")
    from microkernel.gemm_typed import kernel_for
    k = kernel_for(A, B)
    assert k.spec.isa in USABLE
    want = next(n for n in registry.TYPED_DEFAULTS["bf16"] if registry.spec(n).isa in USABLE)
    assert k.name == want
    assert np.array_equal(mk.gemm(A, B), np.full((5, 7), 6.0, np.float32))


# -- the probe's decoder on injected CPUID / XCR0 values ----------------------------------

# Intel SDM vol. 2A, CPUID leaf 7: subleaf 0 ECX[11] AVX512_VNNI, EDX[22] AMX-BF16,
# EDX[23] AVX512_FP16, EDX[24] AMX-TILE, EDX[25] AMX-INT8; subleaf 1 EAX[5] AVX512_BF16
# (valid when leaf 7.0 EAX, the max subleaf, >= 1). XCR0 (vol. 1, 13.1): bits 1-2
# SSE/AVX, 5-7 opmask/ZMM, 17-18 TILECFG/TILEDATA.
L1_ECX = (1 << 12) | (1 << 27) | (1 << 28)                      # FMA, OSXSAVE, AVX
L7_EBX = (1 << 5) | (1 << 16) | (1 << 17) | (1 << 30) | (1 << 31)  # AVX2, F, DQ, BW, VL
VNNI, AMX_BF16, FP16, AMX_TILE, AMX_INT8, BF16 = 1 << 11, 1 << 22, 1 << 23, 1 << 24, 1 << 25, 1 << 5
XCR0_ZMM, XCR0_AMX = 0xE7, 0x60000


def _decode(ecx=0, edx=0, eax1=0, max_sub=1, xcr0=XCR0_ZMM | XCR0_AMX, permitted=1):
    ffi, lib = mp.load_c_probe()
    r = ffi.new("mk_x86_regs *")
    r.leaf0.eax = 0x1F
    r.leaf1.eax, r.leaf1.ecx = 0x000806F8, L1_ECX
    r.leaf7_0.eax, r.leaf7_0.ebx, r.leaf7_0.ecx, r.leaf7_0.edx = max_sub, L7_EBX, ecx, edx
    r.leaf7_1.eax = eax1
    feat = ffi.new("mk_cpu_features *")
    assert lib.mk_probe_decode_x86_amx(r, xcr0, permitted, feat) == 0
    return feat, mp.info_from_c(ffi, feat)


def test_sapphire_rapids_bits_give_every_new_isa():
    feat, info = _decode(ecx=VNNI, edx=AMX_BF16 | FP16 | AMX_TILE | AMX_INT8, eax1=BF16)
    assert (feat.avx512_vnni, feat.avx512_fp16, feat.avx512_bf16) == (1, 1, 1)
    assert (feat.amx_tile, feat.amx_bf16, feat.amx_int8, feat.os_amx) == (1, 1, 1, 1)
    assert info.isas == ("scalar", "avx2", "avx512", "avx512bf16", "avx512fp16",
                         "avx512vnni", "amx")
    assert info.best_isa == "avx512"          # typed ISAs serve their own types only
    assert info.features["amx_permitted"] is True


@pytest.mark.parametrize("kw,absent", [
    (dict(permitted=0), "amx"),                            # the kernel refused the tile data
    (dict(xcr0=XCR0_ZMM), "amx"),                          # no TILECFG/TILEDATA state in XCR0
    (dict(xcr0=XCR0_ZMM | 0x20000), "amx"),                # TILECFG without TILEDATA
    (dict(edx=FP16 | AMX_TILE | AMX_INT8), "amx"),         # no AMX-BF16
    (dict(edx=FP16 | AMX_TILE | AMX_BF16), "amx"),         # no AMX-INT8
    (dict(max_sub=0), "avx512bf16"),                       # leaf 7 subleaf 1 absent
    (dict(eax1=0), "avx512bf16"),
    (dict(ecx=0), "avx512vnni"),
    (dict(edx=AMX_BF16 | AMX_TILE | AMX_INT8), "avx512fp16"),
])
def test_each_new_isa_needs_its_bits_and_state(kw, absent):
    args = dict(ecx=VNNI, edx=AMX_BF16 | FP16 | AMX_TILE | AMX_INT8, eax1=BF16)
    args.update(kw)
    _, info = _decode(**args)
    assert absent not in info.isas
    assert "avx512" in info.isas


def test_no_zmm_state_means_no_typed_isa_at_all():
    """AVX-512 bits in CPUID but the OS saves no ZMM state (a VM): none of them."""
    _, info = _decode(ecx=VNNI, edx=AMX_BF16 | FP16 | AMX_TILE | AMX_INT8, eax1=BF16,
                      xcr0=0x7 | XCR0_AMX)
    assert info.isas == ("scalar", "avx2")


def test_the_pure_decoder_never_grants_amx():
    """mk_probe_decode_x86 (no syscall) leaves amx_permitted 0: only mk_probe asks."""
    ffi, lib = mp.load_c_probe()
    r = ffi.new("mk_x86_regs *")
    r.leaf0.eax, r.leaf1.ecx = 0x1F, L1_ECX
    r.leaf7_0.eax, r.leaf7_0.ebx, r.leaf7_0.edx = 1, L7_EBX, AMX_BF16 | AMX_TILE | AMX_INT8
    feat = ffi.new("mk_cpu_features *")
    assert lib.mk_probe_decode_x86(r, XCR0_ZMM | XCR0_AMX, feat) == 0
    assert feat.os_amx and not feat.amx_permitted and not feat.usable_amx


# -- blocking, peers, --dtype ---------------------------------------------------------------

def test_blocking_is_element_size_aware():
    """Half the bytes per element: twice the KC for the same L1 ways (Low et al.'s rule
    with S_A, S_B; a Sapphire-Rapids-like L1 of 48 KiB, 12 ways, 64 sets)."""
    from microkernel.blocking import model_blocking, panel_bytes
    from microkernel.probe import Cache
    caches = (Cache(1, "Data", 48 * 1024, 12, 64, 64), Cache(2, "Unified", 2 << 20, 16, 2048, 64))
    f32 = model_blocking(32, 32, caches)
    bf16 = model_blocking(32, 32, caches, 2, 2)
    i8 = model_blocking(32, 32, caches, 1, 1)
    # C_Ar = 11 / 2 ways for A: KC = 5.5 * 64 * 64 / (32 * S) = 704 / S, to a multiple of 16
    assert (f32.kc, bf16.kc, i8.kc) == (176, 352, 704)
    assert panel_bytes(TileSpec.from_name("amx_bf16_32x32")) == (2, 2)
    assert panel_bytes(TileSpec.from_name("amx_u8s8_32x32")) == (1, 1)
    assert panel_bytes(TileSpec.from_name("avx512fp16_8x64")) == (4, 2)   # A values doubled
    assert panel_bytes(TileSpec.from_name("avx2_4x24_u8")) == (4, 4)


@pytest.mark.parametrize("types", ["bf16", "f16", "s8s8", "u8s8", "u8u8"])
def test_peers_are_type_aware(types):
    from microkernel import dtypes, peers, validate
    t = dtypes.get(types)
    rng = np.random.default_rng(3)
    from microkernel.bench import typed_operands
    A, B = typed_operands(rng.standard_normal((20, 30), dtype=np.float32),
                          rng.standard_normal((30, 10), dtype=np.float32).T.copy().T,
                          types, rng)
    assert A.dtype == t.dtype("a") and B.dtype == t.dtype("b")
    assert B.flags.f_contiguous and not B.flags.c_contiguous        # the layout is kept
    assert "numpy" in peers.available(types=types)
    assert "blis" not in peers.available(types=types)
    p = peers.typed_call("numpy", A, B, types)
    p.fn()
    ref, bound = validate.reference(A, B, np.zeros((20, 10), np.float32), 1, 0, "f32")
    assert validate.check(p.result(), ref, bound)[0]
    if types in ("u8s8", "u8u8"):
        assert "no" in peers.typed_why_not("torch", types)


def test_integer_reference_through_float64_is_exact():
    from microkernel import validate
    rng = np.random.default_rng(0)
    A = rng.integers(-128, 128, (9, 5000)).astype(np.int8)
    B = rng.integers(0, 256, (5000, 7)).astype(np.uint8)
    want = A.astype(np.int64) @ B.astype(np.int64)
    assert np.array_equal(validate._int_matmul(A, B), want)


def test_bench_dtype_times_each_kernel_against_its_own_peak(tmp_path):
    import json
    from microkernel.cli import main
    out = tmp_path / "b.json"
    name = "avx2_u8s8_4x16" if "avx2" in USABLE else "scalar_u8s8_4x4"
    assert main(["bench", "--dtype", "u8s8", "--kernel", name, "--kernel", "scalar_u8s8_4x4",
                 "--sizes", "40", "--rounds", "2", "--min-time", "0.002", "--kc", "32",
                 "--peers", "numpy", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["dtype"] == "u8s8"
    peaks = {r["kernel"]: r["peak"] for r in res["l1"]}
    if name != "scalar_u8s8_4x4":
        assert peaks[name] == f"fma_peak:{name.split('_')[0]}/u8s8"
    # scalar tiles: the best ISA's fp32 FMA loop (the compiler vectorises their C, and
    # the scalar multiply-add loop is latency-bound: they read 116-289% of it)
    assert peaks["scalar_u8s8_4x4"] == "fma_peak"
    assert set(peaks.values()) <= set(res["own_peaks"])


def test_bench_dtype_errors():
    from microkernel.cli import main
    assert main(["bench", "--dtype", "bf16", "--kernel", "scalar_s8s8_4x4", "--sizes", "8"]) == 2
    if "avx512fp16" not in USABLE:
        assert main(["bench", "--dtype", "f16h", "--sizes", "8"]) == 2


def test_compare_dtype_checks_every_contender(capsys):
    from microkernel.cli import main
    assert main(["compare", "--kernels", "scalar_bf16_4x4", "--dtype", "bf16", "--sizes", "24",
                 "--rounds", "2", "--min-time", "0.002", "--peers", "numpy"]) == 0
    assert "scalar_bf16_4x4" in capsys.readouterr().out


def test_sweep_dtype_picks_the_types_isa_and_predicts_amx(capsys):
    from microkernel.sweep import candidates, sweep_isa
    want = next(registry.spec(n).isa for n in registry.TYPED_DEFAULTS["bf16"]
                if registry.spec(n).isa in USABLE)
    assert sweep_isa("bf16") == want
    amx = candidates("amx", types="s8s8")
    assert amx and all(s.types == "s8s8" and register_budget(s).needed <= 8 for s in amx)
    assert TileSpec.from_name("amx_s8s8_32x32") in amx
    from microkernel.cli import main
    if "amx" not in USABLE:
        assert main(["sweep", "--dtype", "u8s8", "--isa", "amx", "--mr", "16,32",
                     "--nr", "32"]) == 0
        out = capsys.readouterr().out
        assert "PREDICTED" in out and "amx_u8s8_32x32" in out
    assert main(["sweep", "--dtype", "f16h", "--isa", "avx2"]) == 2


@pytest.mark.skipif(not IS_X86, reason="x86-64 host")
def test_qemu_max_cpu_has_none_of_the_new_isas():
    """QEMU's TCG emulates x86 up to AVX2 (QEMU 7.2 here): ``-cpu max`` reports no
    AVX-512 and no AMX, so the new tiles cannot run under emulation on this machine
    (their instructions run only emulated in C, tests/test_x86_emulated.py, and on the
    device). Under it the probe refuses them as on the host, with no SIGILL."""
    import json
    import shutil
    import subprocess
    import sys
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.skip("qemu-x86_64 not found (Debian: qemu-user)")
    script = ("import json, microkernel as mk\n"
              "from microkernel.dispatch import IsaUnavailableError\n"
              "out = {'isas': list(mk.probe().isas), 'refused': []}\n"
              "for n in ('amx_bf16_32x32', 'avx512bf16_8x32', 'avx512fp16_8x64',\n"
              "          'avx512vnni_u8s8_8x32'):\n"
              "    try:\n        mk.get_kernel(n)\n"
              "    except IsaUnavailableError:\n        out['refused'].append(n)\n"
              "print('RESULT', json.dumps(out))\n")
    res = subprocess.run([qemu, "-cpu", "max", sys.executable, "-c", script],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.split("RESULT ", 1)[1])
    assert not set(got["isas"]) & {"avx512", *NEW}
    assert len(got["refused"]) == 4
