"""The driver's C-stationary loops (c_src/mk_cstat.h, MK_C_STATIONARY: B packed whole,
each MC x NC block of C accumulated in compact tiles across the KC blocks and written
to C once, row by row), which a module that defines MK_C_STATIONARY (the AMX and
AVX512-BF16 tiles) takes at one thread when K spans several KC blocks. With beta = 0
and C of at least MK_CSTAT_NT_MIN bytes (16 MiB), that row pass stores C
non-temporally: the emulated tiles run the ordinary stores (the shapes here are small),
the native ones the non-temporal stores (built with the threshold at 1 byte).

Run here on those tiles with their intrinsics emulated (tests/x86emul, as in
tests/test_x86_emulated.py), and on every tile this CPU runs natively with the define
added to its source. Each against the float64 reference (integers exact): the edge
catalogue (its small-blocking cases span several KC blocks at one thread), and shapes
whose K spans several KC blocks with alpha / beta of every kind, edges in M and N,
transposed and strided operands. The workspace a call leaves behind shows which loops
ran: these hold the whole packed B, the BLIS loops one KC x NC block of it (a module
built with MK_BLIS_LOOPS, the negative control)."""
from __future__ import annotations

import platform

import numpy as np
import pytest

import microkernel as mk
from microkernel import codegen, registry, validate
from microkernel.dispatch import get_kernel
from microkernel.dtypes import get as types_get

X86 = platform.machine().lower() in ("x86_64", "amd64")
#: the edits that make a module take the C-stationary loops (and write C with
#: non-temporal stores whenever beta = 0, not only from 16 MiB of C), or never take them
DEFINE = ("#include <stdint.h>",
          "#define MK_C_STATIONARY 1\n#define MK_CSTAT_NT_MIN 1\n#include <stdint.h>")
BLIS = ("#include <stdint.h>", "#define MK_BLIS_LOOPS 1\n#include <stdint.h>")
#: (m, n, k): K over several KC blocks of the blockings below; M and N with edges
SHAPES = [(70, 50, 700), (64, 64, 300), (96, 33, 129), (33, 96, 257)]
BLOCKINGS = [{"kc": 128}, {"kc": 64, "mc": 64, "nc": 32}, {"kc": 96, "mc": 32, "nc": 64}]
ALPHA_BETA = [(1, 1), (1, 0), (2, 1), (1, -1), (-2, 0)]


def _operands(rng, types: str, m: int, n: int, k: int):
    """A (a transposed view), B (a strided view), C0, of ``types`` (microkernel.dtypes)."""
    t = types_get(types)
    if t.integer:
        lo = {np.dtype(np.uint8): 0, np.dtype(np.int8): -128}
        A = rng.integers(lo[t.dtype("a")], 128, (k, m)).astype(t.dtype("a")).T
        B = rng.integers(lo[t.dtype("b")], 128, (k, 2 * n)).astype(t.dtype("b"))[:, ::2]
        C0 = rng.integers(-99, 99, (m, n)).astype(np.int32)
    else:
        A = rng.uniform(-1, 1, (k, m)).astype(t.dtype("a")).T
        B = rng.uniform(-1, 1, (k, 2 * n)).astype(t.dtype("b"))[:, ::2]
        C0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    return A, B, C0


def _failures(k) -> list:
    """The edge catalogue's failed cases, then the multi-KC-block cases' ones."""
    bad = [(r.case.label, r.detail) for r in validate.run_catalogue(k) if not r.ok]
    rng = np.random.default_rng(7)
    for m, n, kk in SHAPES:
        for alpha, beta in ALPHA_BETA:
            for blk in BLOCKINGS:
                A, B, C0 = _operands(rng, k.spec.types, m, n, kk)
                C = C0.copy()
                mk.gemm(A, B, C, alpha=alpha, beta=beta, kernel=k, blocking=blk, threads=1)
                ref, bound = validate.reference(A, B, C0, alpha, beta, k.spec.types)
                ok, _, _, detail = validate.check(C, ref, bound)
                if not ok:
                    bad.append(((m, n, kk, alpha, beta, tuple(blk.items())), detail))
    return bad


def _holds_whole_b(k) -> bool:
    """After a 64 x 512 x 320 GEMM at KC = 64, NC = 32 (five KC blocks), whether the
    calling thread's workspace holds the whole packed B (320 x 512 panel elements):
    the BLIS loops need one 64 x 32 block of it (and MC x KC of A)."""
    rng = np.random.default_rng(3)
    A, B, C0 = _operands(rng, k.spec.types, 64, 512, 320)
    mk.gemm(A, B, C0, kernel=k, threads=1, blocking={"kc": 64, "mc": 64, "nc": 32})
    elem = np.dtype(types_get(k.spec.types).dtype("b")).itemsize
    return int(k.lib.mk_workspace_bytes()) >= 320 * 512 * elem


@pytest.mark.skipif(not X86, reason="the emulated kernels are x86 C")
@pytest.mark.parametrize("name", ["amx_bf16_32x32", "amx_s8s8_32x32", "amx_u8s8_32x32",
                                  "avx512bf16_8x32"])
def test_c_stationary_loops_on_the_emulated_tiles(name):
    """The modules that define MK_C_STATIONARY by default (AMX, AVX512-BF16)."""
    from test_x86_emulated import emulated
    assert codegen.c_stationary(registry.spec(name))
    k = emulated(name)
    assert _holds_whole_b(k)
    assert not _failures(k)
    assert k.lib.mk_emu_faults_c() == 0


@pytest.mark.skipif(not X86, reason="the emulated kernels are x86 C")
@pytest.mark.parametrize("name,edit", [("amx_bf16_32x32", BLIS), ("avx512vnni_u8s8_8x32", None),
                                       ("avx512fp16_8x64", None)])
def test_negative_control_the_blis_loops_hold_one_block_of_b(name, edit):
    """A module built with MK_BLIS_LOOPS, and the typed tiles that keep the BLIS loops
    (measured no faster with the others on one of the two machines)."""
    from test_x86_emulated import emulated
    assert codegen.c_stationary(registry.spec(name)) == (edit is not None)
    assert not _holds_whole_b(emulated(name, edit))


def _native() -> list[str]:
    usable = set(mk.probe().isas)
    return sorted({s.name for s in registry.BUILTIN + registry.DEVICE_TYPED
                   if s.isa in usable and s.isa != "scalar"}) + ["scalar_4x4"]


def _with_define(name: str, tmp_path):
    """``name``'s kernel built from its generated source with MK_C_STATIONARY added."""
    text = codegen.generate(registry.spec(name))
    assert DEFINE[0] in text
    path = tmp_path / f"{name}_cstat.c"
    path.write_text(text.replace(DEFINE[0], DEFINE[1], 1))
    return get_kernel(name, source=path)


@pytest.mark.parametrize("name", _native())
def test_c_stationary_loops_on_the_native_tiles(name, tmp_path):
    k = _with_define(name, tmp_path)
    assert _holds_whole_b(k)
    assert not _failures(k)


def test_workspace_bound_of_the_c_stationary_loops(tmp_path):
    """At one thread the loops hold the whole packed B (K x N), an A row block and one
    MC x NC block of C's tiles: the bound `bench` prints for them covers it, and the
    BLIS loops' bound (one KC x NC block of B) does not."""
    from microkernel.blocking import workspace_bound
    from microkernel.gemm import blocking_for
    kern = _with_define(mk.kernels()[0], tmp_path)
    blk = blocking_for(kern).replace(kc=64, mc=64, nc=96)
    m, n, k = 100, 300, 500
    mk.gemm(np.ones((m, k), np.float32), np.ones((k, n), np.float32), kernel=kern, threads=1,
            blocking=blk)
    ws = kern.lib.mk_workspace_bytes()
    assert 4 * n * k <= ws <= workspace_bound(kern.spec, blk, m, n, k, 1, True)
    assert ws > workspace_bound(kern.spec, blk, m, n, k, 1, False)


@pytest.mark.skipif("avx512vnni" not in mk.probe().isas, reason="the probe does not clear avx512vnni")
@pytest.mark.parametrize("name", ["avx512vnni_s8s8_8x32", "avx512vnni_u8u8_8x32"])
def test_workspace_bound_counts_the_column_sum_trailer(name, tmp_path):
    """The s8s8 / u8u8 VNNI modules pack one K group more per KC block (MK_B_COLSUM,
    mk_cstat.h, mk_cstat_kp): the C-stationary bound counts it (here 16 KC blocks of B's 512
    padded columns, 36 KiB past the bound without it). Measured on a fresh thread: the
    workspace is per calling thread and only grows."""
    import threading
    from microkernel.blocking import workspace_bound
    from microkernel.gemm import blocking_for
    kern = _with_define(name, tmp_path)
    blk = blocking_for(kern).replace(kc=64, mc=64, nc=256)
    m, n, k = 64, 500, 1024
    t = types_get(kern.spec.types)
    held = []

    def run():
        mk.gemm(np.ones((m, k), t.dtype("a")), np.ones((k, n), t.dtype("b")), kernel=kern,
                threads=1, blocking=blk)
        held.append(int(kern.lib.mk_workspace_bytes()))
    th = threading.Thread(target=run)
    th.start()
    th.join()
    assert held and held[0] <= workspace_bound(kern.spec, blk, m, n, k, 1, True)
