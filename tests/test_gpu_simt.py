"""The warp-tiled SIMT kernel, split-K, the launch planner and the GPU sweep hook.

Kernels run under numba's CUDA simulator (set before numba is imported, as in
test_gpu_sim.py; ``NUMBA_ENABLE_CUDASIM=0`` runs the same tests on a GPU). The
planner, the layouts and the bank model are pure Python. Expected values are
worked out by hand in the comments, never taken from the code under test.
"""
import json
import os
import subprocess
import sys

# first: sets NUMBA_ENABLE_CUDASIM; skips the module without numba-cuda or a device
from _cudasim import SIM, cuda, reference as _ref, error_bound as _bound

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from microkernel.gpu import front, launch, simt
from microkernel.gpu import simt_banks as banks  # noqa: E402
from microkernel.gpu import port as gp  # noqa: E402
from microkernel.gpu.intrinsics import sim_ldg4, sim_st4  # noqa: E402
from microkernel.gpu.occupancy import SmLimits, busiest_sm_rounds  # noqa: E402
from microkernel.gpu.tiles import DEFAULT_TILE, GpuTile, LEGACY_TILE, parse_warp  # noqa: E402

#: Simulator-sized warp tiles: 2x2 thread tiles, 4x8 lanes -> 8x16 warp tiles, in a
#: 16x16 block of 2 warps stacked along M (float4 groups), and in an 8x32 block of
#: 2 warps side by side along N with contiguous thread tiles and one stage.
T_M = GpuTile(2, 2, 16, 16, 4, wm=8, wn=16)
T_N = GpuTile(2, 2, 8, 32, 8, wm=8, wn=16, layout="contiguous", stages=1)
#: The same block shapes with cp.async staging (3 and 2 stages; the simulator copies
#: at once, so these check the copies' indices, guards and zero-fill and the stage
#: rotation, not the asynchrony).
T_MA = GpuTile(2, 2, 16, 16, 4, wm=8, wn=16, stages=3, copy="async")
T_NA = GpuTile(2, 2, 8, 32, 8, wm=8, wn=16, layout="contiguous", stages=2, copy="async")
#: A kept k-contiguous and copied by 16 bytes (copy="async16"): 4x2 thread tiles (the
#: rows of a fragment group are 4), 2 warps of 16x16 stacked along M, 3 stages.
T_MR = GpuTile(4, 2, 32, 16, 8, wm=16, wn=16, stages=3, copy="async16")
#: T_M with grouped rasterization: 3 block rows per group (gpu/raster.py).
T_MG = GpuTile(2, 2, 16, 16, 4, wm=8, wn=16, group_m=3)
#: 2x4 thread tiles (groups of 4 along N): C stored and split-K summed by float4s.
T_M4 = GpuTile(2, 4, 16, 32, 4, wm=8, wn=32)


def _operands(m, n, k, seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k)).astype(np.float32),
            rng.uniform(-1, 1, (k, n)).astype(np.float32),
            rng.uniform(-1, 1, (m, n)).astype(np.float32))


# -- the warp-tiled kernel ----------------------------------------------------------

@pytest.mark.parametrize("tile", [T_M, T_N, T_MA, T_NA, T_MR, T_MG], ids=lambda t: t.name)
def test_warp_tiled_validation_catalogue(tile):
    """Odd shapes (17x33x5, 1x1x1, 64x40x3, 24^3), alpha/beta, NaN in C with beta=0,
    NaN in A and B with alpha=0, K=0, M=0, N=0, with guard elements around C."""
    results = gp.validate(tile, gp.SIM_CASES)
    assert not [r for r in results if not r["ok"]]
    assert {"17x33x5", "beta=0 NaN C", "alpha=0 NaN A,B", "24x24x24"} <= {
        r["label"] for r in results}


def test_flat_source_variant_matches_the_reference(monkeypatch):
    """The scalar-statement form of the same kernel (simt.LOOPS = False)."""
    from microkernel.gpu import kernel as gk
    monkeypatch.setattr(simt, "LOOPS", False)
    tile = GpuTile(2, 2, 16, 16, 4, wm=8, wn=16, min_blocks=2)   # its own cache entry
    try:
        A, B, C0 = _operands(19, 22, 13, 9)
        C = C0.copy()
        front.gemm(A, B, C, alpha=0.5, beta=2.0, tile=tile, split=2)
        assert np.all(np.abs(C - _ref(A, B, C0, 0.5, 2.0)) <= _bound(A, B, C0, 0.5, 2.0))
        assert "acc0_0" in gk.kernel_for(tile).dispatcher.py_func.__microkernel_source__
    finally:
        gk.clear_cache()


@pytest.mark.parametrize("tile", [T_M, T_MA, T_MR], ids=lambda t: t.name)
def test_float4_and_scalar_variants(tile):
    """K and N multiples of 4 with aligned operands take the float4 variant (whose
    simulator loads and 16-byte copies assert the alignment contract); an operand 4
    bytes off a 16-byte boundary, or K % 4 != 0, takes the scalar one; both are right."""
    kern = front._resolve_tile(tile)
    A, B, C0 = _operands(20, 24, 12, 1)
    dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C0)
    assert kern.variant_for(dA, dB, dC) == "vec"
    front.gemm(dA, dB, dC, alpha=1.5, beta=-1.0, tile=tile)
    got = dC.copy_to_host()
    assert np.all(np.abs(got - _ref(A, B, C0, 1.5, -1.0)) <= _bound(A, B, C0, 1.5, -1.0))
    buf = cuda.to_device(np.zeros(20 * 12 + 1, np.float32))
    dA1 = buf[1:].reshape(20, 12)                 # data pointer 4 bytes off
    dA1.copy_to_device(A)
    assert kern.variant_for(dA1, dB, dC) == "scalar"
    dC.copy_to_device(C0)
    front.gemm(dA1, dB, dC, alpha=1.5, beta=-1.0, tile=tile)
    assert np.all(np.abs(dC.copy_to_host() - _ref(A, B, C0, 1.5, -1.0))
                  <= _bound(A, B, C0, 1.5, -1.0))
    A5 = np.ascontiguousarray(A[:, :5])
    assert kern.variant_for(cuda.to_device(A5), cuda.to_device(B[:5]), dC) == "scalar"


def test_simulated_vector_access_contract():
    a = np.arange(24, dtype=np.float32).reshape(3, 8)
    assert sim_ldg4(a, 12) == (12.0, 13.0, 14.0, 15.0)
    with pytest.raises(AssertionError, match="multiple of 4"):
        sim_ldg4(a, 6)
    b = np.arange(18, dtype=np.float32).reshape(3, 6)
    with pytest.raises(AssertionError, match="crosses the end of a row"):
        sim_ldg4(b, 4)                              # (0, 4): columns 4..7 of 6
    sim_st4(a, 16, 1.0, 2.0, 3.0, 4.0)
    assert a[2, :4].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_simulated_async_copy_contract():
    from microkernel.gpu.async_copy import sim_cp_async4, sim_cp_async16
    src = np.arange(24, dtype=np.float32).reshape(3, 8)
    dst = np.full(8, -1.0, np.float32)
    sim_cp_async16(dst, 4, src, 12, 16)
    assert dst[4:].tolist() == [12.0, 13.0, 14.0, 15.0]
    sim_cp_async16(dst, 4, src, 12, 0)                 # src-size 0: zeros, nothing read
    assert dst[4:].tolist() == [0.0] * 4
    sim_cp_async4(dst, 1, src, 9, 4)
    sim_cp_async4(dst, 2, src, 9, 0)
    assert dst[:3].tolist() == [-1.0, 9.0, 0.0]
    with pytest.raises(AssertionError, match="multiple of 4"):
        sim_cp_async16(dst, 2, src, 12, 16)
    with pytest.raises(AssertionError, match="crosses a row end"):
        sim_cp_async16(dst, 0, np.zeros((3, 6), np.float32), 4, 16)


def test_async_copy_tile_errors():
    with pytest.raises(ValueError, match="needs a warp tile"):
        GpuTile(8, 8, 128, 128, 8, copy="async")
    with pytest.raises(ValueError, match="stages 2, 3 or 4"):
        GpuTile(2, 2, 16, 16, 4, wm=8, wn=16, stages=1, copy="async")
    with pytest.raises(ValueError, match="copy must be"):
        GpuTile(2, 2, 16, 16, 4, wm=8, wn=16, copy="tma")
    assert T_MA.name == "gpu_2x2_b16x16x4_w8x16_s3_cpa"
    src = simt.kernel_source(T_MA, vec=True)
    assert src.count("cp_commit()") == 3 and "cp_wait1()" in src and "cp_wait0()" in src
    with pytest.raises(ValueError, match="tm % 4 == 0"):
        GpuTile(2, 2, 16, 16, 4, wm=8, wn=16, stages=3, copy="async16")
    with pytest.raises(ValueError, match="needs stages 2, 3 or 4"):
        GpuTile(4, 2, 32, 16, 8, wm=16, wn=16, stages=1, copy="async16")
    with pytest.raises(ValueError, match=r"needs bk in \(8, 12, 16, 24, 32\)"):
        GpuTile(4, 2, 32, 16, 20, wm=16, wn=16, stages=2, copy="async16")


def test_async16_copies_a_by_16_bytes_and_reads_4_k_per_row():
    """copy="async16": one 16-byte copy per float4 of A and of B in the float4 variant,
    to and from addresses formed once per thread (4-byte copies by index in the scalar
    variant, as "async" always does), guarded except in the exact variant; per 4 k one
    float4 of A per row of the thread tile: a BK 8 stage has 2 such groups of loads."""
    assert T_MR.name == "gpu_4x2_b32x16x8_w16x16_s3_cp16"
    vec, sca = simt.kernel_source(T_MR, vec=True), simt.kernel_source(T_MR, vec=False)
    exa = simt.kernel_source(T_MR, vec=True, exact=True)
    lay = T_MR.shared_layout            # a_row BK + 4, quarters BM/4 rows + BK floats
    # A's 64 float4s and B's 32 over 64 threads: one copy of each per thread and k
    # block (B's pass is partial), emitted for the 2 blocks of the prologue (3 stages)
    # and once in the loop
    for src in (vec, exa):
        assert src.count("cp_async16_at(xa0") == 2 + 1 == src.count("cp_async16_at(xb0")
        assert "cp_async4(" not in src and "xa0 = smem_u32(As, sa0)" in src
    copies = [ln for ln in exa.splitlines() if "cp_async16_at(" in ln]
    assert not [ln for ln in copies if "selp" in ln]
    assert all("cuda.selp(" in ln for ln in vec.splitlines() if "cp_async16_at(" in ln)
    assert "cp_async16" not in sca and sca.count("cp_async4(As") == (2 + 1) * 4
    assert vec.count("r4[i, 3] = As[") == 2 and vec.count("cuda.fma(r4[i, ") == 8
    assert (lay.a_row, lay.a_quarter, lay.a_rows) == (12, 8 * 12 + 8, 32)
    assert [lay.a_index(k, m) for m, k in ((0, 0), (1, 0), (4, 0), (5, 3))] == [0, 104, 12, 119]


def test_async16_exact_variant():
    """A problem the tile divides takes the guard-free copies; split-K too."""
    kern = front._resolve_tile(T_MR)
    for m, n, k, split in ((64, 32, 16, 1), (96, 48, 64, 3)):
        A, B, C0 = _operands(m, n, k, m + split)
        dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C0)
        assert kern.variant_for(dA, dB, dC) == "exact"
        front.gemm(dA, dB, dC, alpha=0.75, beta=0.5, tile=T_MR, split=split)
        assert np.all(np.abs(dC.copy_to_host() - _ref(A, B, C0, 0.75, 0.5))
                      <= _bound(A, B, C0, 0.75, 0.5))


def test_kernel_source_is_unrolled_and_vectorised():
    vec = simt.kernel_source(DEFAULT_TILE, vec=True)
    sca = simt.kernel_source(DEFAULT_TILE, vec=False)
    flat = simt.kernel_source(DEFAULT_TILE, vec=True, loops=False)
    # 8 k per stage unrolled: one 8x8 FMA loop nest per k step; written out, 512 FMAs
    assert vec.count("cuda.fma(") == 8 == sca.count("cuda.fma(")
    assert flat.count("cuda.fma(") == 8 * 8 * 8
    assert "ldg4(A," in vec and "ldg4(B," in vec and "st4(X," in vec
    assert "ldg4" not in sca and "st4(" not in sca
    assert flat.count("for ") == 2               # the k-block loop and the split-K tail's
    with pytest.raises(ValueError, match="no warp tile"):
        simt.kernel_source(LEGACY_TILE)


def test_warp_tile_ownership():
    """DEFAULT_TILE: 8 warps as 4 (M) x 2 (N) of 32x64, lanes 4 x 8, float4 groups
    strided by 16 rows and 32 columns. Thread 0: rows 0-3, 16-19; columns 0-3, 32-35.
    Thread 33 = warp 1 (warp row 0, warp column 1: columns from 64), lane 1 (lane
    row 0, lane column 1): columns 68-71 and 100-103."""
    t = DEFAULT_TILE
    assert (t.lm, t.ln, t.warps, t.threads) == (4, 8, (4, 2), 256)
    assert t.thread_rows(0) == [0, 1, 2, 3, 16, 17, 18, 19]
    assert t.thread_cols(0) == [0, 1, 2, 3, 32, 33, 34, 35]
    assert t.thread_rows(33) == [0, 1, 2, 3, 16, 17, 18, 19]
    assert t.thread_cols(33) == [68, 69, 70, 71, 100, 101, 102, 103]
    # thread 70 = warp 2 (warp row 1: rows from 32), lane 6 (lane row 0, column 6)
    assert t.thread_rows(70)[0] == 32 and t.thread_cols(70)[0] == 24
    cover = np.zeros((t.bm, t.bn), int)
    for tid in range(t.threads):
        cover[np.ix_(t.thread_rows(tid), t.thread_cols(tid))] += 1
    assert (cover == 1).all()                       # every element once


@pytest.mark.parametrize("kw, match", [
    (dict(tm=2, tn=2, bm=16, bn=16, bk=4, wm=8, wn=8), "16 lanes"),
    (dict(tm=2, tn=2, bm=16, bn=16, bk=6, wm=8, wn=16), "multiple of 4"),
    (dict(tm=2, tn=2, bm=16, bn=16, bk=4, wm=8, wn=16, index="i64"), "u32"),
    (dict(tm=2, tn=2, bm=16, bn=16, bk=4, wm=8), "wn"),
    (dict(tm=2, tn=2, bm=24, bn=16, bk=4, wm=16, wn=8), "not a multiple of the warp"),
    (dict(tm=2, tn=2, bm=16, bn=16, bk=4, wm=8, wn=16, group_m=0), "group_m"),
    (dict(tm=2, tn=2, bm=16, bn=16, bk=4, group_m=2), "needs a warp tile"),
])
def test_warp_tile_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        GpuTile(**kw)


#: Problems T_M (16x16x4 blocks) divides, so that the guard-free "exact" variant runs:
#: the simulator's float4 loads assert that every access is inside the A and B arrays
#: (a load past the matrix fails the case; one past a split inside A shows only as
#: wrong numbers, which the bound catches where the value is used).
EXACT_CASES = (("32x32x16", 32, 32, 16, 1.0, 0.0, None),
               ("48x16x32 a,b", 48, 16, 32, 1.5, -0.5, None),
               ("beta=0 NaN C", 16, 32, 8, 1.0, 0.0, "nan_c"),
               ("alpha=0 NaN A,B", 16, 16, 8, 0.0, 2.0, "nan_ab"),
               ("K=0", 16, 16, 0, 1.0, 0.5, None),
               ("one k block", 16, 16, 4, -1.0, 1.0, None))


@pytest.mark.parametrize("tile", [T_M, T_MG], ids=lambda t: t.name)
def test_exact_variant_catalogue(tile):
    kern = front._resolve_tile(tile)
    A, B, C = (np.zeros((16, 8), np.float32), np.zeros((8, 16), np.float32),
               np.zeros((16, 16), np.float32))
    assert kern.variant_for(cuda.to_device(A), cuda.to_device(B), cuda.to_device(C)) == "exact"
    results = gp.validate(kern, EXACT_CASES)
    assert len(results) == 6 and not [r for r in results if not r["ok"]]


@pytest.mark.parametrize("m, n, k, split", [(32, 32, 64, 2), (32, 16, 48, 3), (16, 16, 8, 2)])
def test_exact_variant_split_k(m, n, k, split):
    """kslice = k / split, a multiple of bk: every split's k range is whole blocks."""
    A, B, C0 = _operands(m, n, k, 11)
    dC = cuda.to_device(C0)
    front.gemm(cuda.to_device(A), cuda.to_device(B), dC, alpha=0.5, beta=-1.0, tile=T_M,
               split=split)
    assert launch.runner(m, n, k, T_M, split, "vec", False, True,
                         launch.device_limits()).variant == "exact"
    out = dC.copy_to_host()
    assert np.all(np.abs(out - _ref(A, B, C0, 0.5, -1.0)) <= _bound(A, B, C0, 0.5, -1.0))


def test_one_stage_runs_guarded_and_odd_kslice_is_refused():
    """T_N (one stage) on a problem it divides runs a guarded variant, within the
    bound; a kslice that is not a multiple of bk (splits not whole k blocks, which
    the exact variant and the float4 loads assume) is refused."""
    A, B, C0 = _operands(32, 32, 16, 5)
    dC = cuda.to_device(C0)
    front.gemm(cuda.to_device(A), cuda.to_device(B), dC, beta=1.0, tile=T_N)
    assert np.all(np.abs(dC.copy_to_host() - _ref(A, B, C0, 1.0, 1.0))
                  <= _bound(A, B, C0, 1.0, 1.0))
    with pytest.raises(ValueError, match="kslice=6 is not a multiple of bk=4"):
        front._resolve_tile(T_M).launch(cuda.to_device(A), cuda.to_device(B), dC,
                                        split=2, kslice=6)


def test_variant_choice():
    """exact only where the tile divides m, n and k and the operands allow float4s;
    never for cp.async tiles (their own main loop)."""
    lim = launch.device_limits()
    assert simt.variant_for(T_M, 32, 32, 16, True) == "exact"
    assert simt.variant_for(T_M, 24, 32, 16, True) == "vec"      # 24 % 16
    assert simt.variant_for(T_M, 32, 24, 16, True) == "vec"
    assert simt.variant_for(T_M, 32, 32, 18, True) == "vec"      # 18 % 4
    assert simt.variant_for(T_M, 32, 32, 16, False) == "scalar"
    assert simt.variant_for(T_MA, 32, 32, 16, True) == "vec"
    assert simt.variant_for(T_N, 32, 32, 16, True) == "vec"      # one stage: no exact loop
    assert "exact" not in front._resolve_tile(T_N).variants
    assert launch.runner(24, 32, 16, T_M, 1, "vec", False, False, lim).variant == "vec"
    assert launch.runner(32, 32, 16, T_M, 1, "scalar", False, False, lim).variant == "scalar"
    assert launch.runner(32, 32, 16, T_MA, 1, "vec", False, False, lim).variant == "vec"
    for t in (T_MA, T_N):
        with pytest.raises(ValueError, match="exact"):
            simt.kernel_source(t, exact=True)
    # the AUTO tiles measured slower exact keep the vec variant (simt.EXACT_SLOWER)
    big = next(t for t in launch.AUTO_TILES if (t.tm, t.tn) == (8, 16))
    sq = next(t for t in launch.AUTO_TILES if (t.bm, t.bn) == (128, 128))
    assert simt.variant_for(big, 4096, 4096, 4096, True) == "vec"
    assert simt.variant_for(sq, 4096, 4096, 4096, True) == "exact"
    # ... a list measured on register-staged tiles: the same shapes with cp.async16 copies
    # take their exact variant
    for t in (GpuTile(8, 16, 128, 256, 8, wm=64, wn=64, stages=3, copy="async16"),
              GpuTile(8, 8, 64, 128, 16, wm=32, wn=64, stages=3, copy="async16")):
        assert simt.variant_for(t, 4096, 4096, 4096, True) == "exact"


@pytest.mark.parametrize("m, n, split", [(80, 48, 1), (80, 48, 2), (16, 80, 1)])
def test_grouped_rasterization_covers_every_tile_once(m, n, split):
    """group_m=3 on 16x16 blocks: m=80 gives 5 block rows, so a full group of 3 and
    a last group of 2 (3 block columns); m=16, one row: groups of 1. Every element of
    C must be written once with the right value: C0 is NaN, beta=0, so a tile that no
    block computed stays NaN and fails the bound."""
    assert T_MG.name == "gpu_2x2_b16x16x4_w8x16_g3"
    A, B, _ = _operands(m, n, 20, 7)
    C0 = np.full((m, n), np.nan, np.float32)
    dC = cuda.to_device(C0)
    front.gemm(cuda.to_device(A), cuda.to_device(B), dC, beta=0.0, tile=T_MG, split=split)
    out = dC.copy_to_host()
    ref = A.astype(np.float64) @ B.astype(np.float64)
    bound = 2 * (20 + 2) * 2.0 ** -24 * (np.abs(A).astype(np.float64) @ np.abs(B))
    assert np.all(np.abs(out - ref) <= bound)


def test_shared_layout_is_conflict_free():
    """The bank model on every access of the candidates, and on a layout without
    the skew (which conflicts: a warp's 32 transposing stores then fall in 16 banks)."""
    from microkernel.gpu.sweep import CANDIDATES
    rowa = {GpuTile(8, 8, 128, 128, bk, wm=32, wn=64, stages=st, copy="async16")
            for bk, st in ((8, 4), (16, 2))} | {
        GpuTile(8, 4, 64, 64, bk, wm=32, wn=32, stages=st, copy="async16")
        for bk, st in ((16, 4), (32, 2))} | {T_MR}
    for t in set(CANDIDATES) | set(launch.AUTO_TILES) | {T_M, T_N} | rowa:
        rep = banks.bank_report(t)
        assert rep["conflict_free"], (t.name, rep)
    # three words 32 apart share bank 0: 3 wavefronts where 1 would do
    assert banks.wavefronts([0, 32, 64], 1) == (3, 1)
    # 8 float4s in a row: 1 wavefront; the same 8 with a 32-float stride: 8
    assert banks.wavefronts([4 * i for i in range(8)], 4) == (1, 1)
    assert banks.wavefronts([32 * i for i in range(8)], 4) == (8, 1)
    lay = DEFAULT_TILE.shared_layout      # bk 8: 2 float4 per row, 16 rows per warp
    assert (lay.a_row, lay.a_skew) == (128, 16)
    # without the skew, lanes (r, q=0) and (r, q=1) store to k rows 0 and 4:
    # 4*128 floats apart, the same bank
    noskew = [c * 128 + r for r in range(16) for c in (0, 4)]
    assert banks.wavefronts(noskew, 1)[0] == 2


@pytest.mark.parametrize("in_flight, tile, rows", [
    (None, T_M4, 0),                                             # one float4 at a time
    (8, GpuTile(2, 4, 16, 32, 4, wm=8, wn=32, group_m=2), 2),   # both rows in one chunk
    (1, GpuTile(2, 4, 16, 32, 4, wm=8, wn=32, group_m=3), 1),   # one row a chunk
], ids=["per-group", "chunk2", "chunk1"])
@pytest.mark.parametrize("m, n, k", [(20, 36, 12), (32, 64, 8)], ids=["edges", "exact"])
def test_epilogue_reads_c_by_chunks_of_rows(monkeypatch, in_flight, tile, rows, m, n, k):
    """beta != 0 with float4 stores: a tile listed in C_LOADS_IN_FLIGHT loads the C of
    a chunk of rows of its thread tile, then stores; others load and store one float4
    group at a time (simt_epilogue). T_M4's 2 x 4 thread tile is one group a row, so 8
    loads take both rows in one chunk and 1 takes a row a chunk (fresh tiles by
    group_m, so that nothing compiled before is reused). 20 x 36: rows 20-31 of the
    second block row and columns 36-63 are outside C (the guarded vec variant);
    32 x 64 x 8 is divided by the tile (the exact variant)."""
    from microkernel.gpu import simt_epilogue
    if in_flight is not None:
        monkeypatch.setitem(simt_epilogue.C_LOADS_IN_FLIGHT, (2, 4, 16, 32), in_flight)
    assert simt_epilogue.rows_per_chunk(tile) == rows
    assert ("cx[h, j" in simt.kernel_source(tile)) == bool(rows)
    A, B, C0 = _operands(m, n, k, 29)
    dC = cuda.to_device(C0)
    front.gemm(cuda.to_device(A), cuda.to_device(B), dC, alpha=1.5, beta=-0.5, tile=tile,
               split=1)
    assert front.gemm.last_plan.split == 1
    assert np.all(np.abs(dC.copy_to_host() - _ref(A, B, C0, 1.5, -0.5))
                  <= _bound(A, B, C0, 1.5, -0.5))


def test_rows_per_chunk_of_the_auto_tiles():
    """8x16 / 128x128 are not listed (0: one group at a time); 8 loads for the 8x8
    thread tile (2 groups a row) is 4 rows; 4 loads for 8x4 (1 group a row) 4 rows."""
    from microkernel.gpu.simt_epilogue import rows_per_chunk
    assert [rows_per_chunk(t) for t in launch.AUTO_TILES] == [0, 0, 4, 4, 4]


# -- split-K --------------------------------------------------------------------------

@pytest.mark.parametrize("tile", [T_M, T_MA, T_M4], ids=lambda t: t.name)
@pytest.mark.parametrize("m, n, k, split, alpha, beta", [
    (20, 36, 64, 3, 1.0, 0.0),       # kslice 24: splits of 24, 24, 16
    (17, 33, 29, 2, -1.5, 0.5),      # K % 4 != 0: scalar variant, last split 13
    (16, 16, 40, 5, 2.0, 1.0),       # kslice 8: five full splits
])
def test_split_k(m, n, k, split, alpha, beta, tile):
    A, B, C0 = _operands(m, n, k, m + n + k)
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    outs = []
    for _ in range(2):
        dC = cuda.to_device(C0)
        front.gemm(dA, dB, dC, alpha=alpha, beta=beta, tile=tile, split=split)
        outs.append(dC.copy_to_host())
    p = front.gemm.last_plan
    assert p.split == split and p.grid[2] == split
    assert p.kslice == -(-(-(-k // split)) // 4) * 4     # ceil(k/split) rounded up to bk
    assert np.all(np.abs(outs[0] - _ref(A, B, C0, alpha, beta)) <= _bound(A, B, C0, alpha, beta))
    assert np.array_equal(outs[0], outs[1])             # bit-identical repeat


class _GridOrder:
    """numpy as the simulator's kernel module sees it, but ``ndindex`` over a 3-D
    launch grid yields the blocks in a given order (the simulator otherwise runs them
    in index order, so a tile's split z = S - 1 would always come last)."""

    def __init__(self, order):
        self.order = order

    def __getattr__(self, name):
        return getattr(np, name)

    def ndindex(self, *dims):
        pts = list(np.ndindex(*dims))
        if len(dims) != 3 or dims[2] == 1:            # not a split-K grid
            return iter(pts)
        if self.order == "reversed":
            return iter(pts[::-1])
        return iter([pts[i] for i in np.random.default_rng(5).permutation(len(pts))])


@pytest.mark.skipif(not SIM, reason="reorders the simulator's blocks")
@pytest.mark.parametrize("tile, split", [(T_M, 2), (T_M4, 2), (T_N, 3), (T_M4, 4)],
                         ids=lambda v: getattr(v, "name", str(v)))
def test_split_k_result_does_not_depend_on_which_block_comes_last(tile, split, monkeypatch):
    """With the blocks run in index order (split S - 1 last), reversed (split 0 last)
    and shuffled (a middle split last in some tiles) the result is bit-identical and
    within the bound, and the counts end at zero: the tile's last block sums the
    partials in the fixed order W_0 + W_1 + ..., whichever it is. 40 x 36 in 16 x 16
    (T_M), 8 x 32 (T_N) or 16 x 32 (T_M4, float4 stores) tiles, k = 96."""
    from numba.cuda.simulator import kernel as simkernel
    m, n, k = 40, 36, 96
    A, B, C0 = _operands(m, n, k, 23)
    outs = []
    for order in (None, "reversed", "shuffled"):
        if order:
            monkeypatch.setattr(simkernel, "np", _GridOrder(order))
        dC = cuda.to_device(C0)
        front.gemm(cuda.to_device(A), cuda.to_device(B), dC, alpha=1.25, beta=-0.5,
                   tile=tile, split=split)
        outs.append(dC.copy_to_host())
        r = launch.runner(m, n, k, tile, split, "vec", False, True, launch.device_limits())
        assert not r.T.copy_to_host().any()
    assert np.all(np.abs(outs[0] - _ref(A, B, C0, 1.25, -0.5)) <= _bound(A, B, C0, 1.25, -0.5))
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


def test_split_k_last_block_of_each_tile_writes_it_and_zeroes_its_count():
    # 3 x 2 tiles of 16 x 16, split 3: each tile's last block sums its 3 partials, and
    # the counts are zero again after the call (the next call relies on it)
    m, n, k = 40, 20, 96
    A, B, C0 = _operands(m, n, k, 11)
    dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C0)
    for _ in range(3):
        dC.copy_to_device(C0)
        front.gemm(dA, dB, dC, alpha=0.75, beta=-1.0, tile=T_M, split=3)
        out = dC.copy_to_host()
        assert np.all(np.abs(out - _ref(A, B, C0, 0.75, -1.0)) <= _bound(A, B, C0, 0.75, -1.0))
    p = front.gemm.last_plan
    assert p.grid == (2, 3, 3)
    r = launch.runner(m, n, k, T_M, 3, "vec", False, True, launch.device_limits())
    assert r.plan is p and r.T.copy_to_host().tolist() == [0] * 6


def test_split_k_beta0_nan_c_and_alpha0():
    A, B, _ = _operands(12, 20, 48, 7)
    C = np.full((12, 20), np.nan, np.float32)
    out = front.gemm(A, B, C, beta=0.0, tile=T_M, split=4)     # C is not read
    assert np.isfinite(out).all()
    assert np.all(np.abs(out - _ref(A, B, None, 1.0, 0.0)) <= _bound(A, B, None, 1.0, 0.0))
    A[0, 0] = np.nan
    C2 = np.ones((12, 20), np.float32)
    front.gemm(A, B, C2, alpha=0.0, beta=3.0, tile=T_M, split=4)   # A, B not read
    assert (C2 == 3.0).all() and front.gemm.last_plan.split == 1


@pytest.mark.parametrize("tile, m, n, k, split, beta", [
    (T_M, 40, 36, 96, 3, -0.5),      # float4 reduction, C read
    (T_M4, 20, 64, 64, 4, 0.0),      # float4, beta == 0 with NaN in C (not read)
    (T_M, 17, 33, 29, 2, 1.0),       # K % 4 != 0: scalar partials and reduction
    (T_MR, 48, 32, 64, 2, 2.0),      # cp.async tile (A k-contiguous in shared memory)
], ids=lambda v: getattr(v, "name", str(v)))
def test_split_k_reduction_kernel_matches_last_block(tile, m, n, k, split, beta):
    """The two split-K forms (the general kernel's last-block reduction, one launch;
    the partials kernel and then the reduction kernel, two launches) add the
    partials in the same order: bit-identical C, within the float64 bound; the
    partials kernel leaves the tile counts alone."""
    A, B, C0 = _operands(m, n, k, 31)
    if beta == 0:
        C0[:] = np.nan
    kern = front._resolve_tile(tile)
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    outs = {}
    for reduce in ("last block", "kernel"):
        dC = cuda.to_device(C0)
        T = cuda.to_device(np.zeros(64, np.uint32))
        kern.launch(dA, dB, dC, 0.75, beta, split=split, T=T, reduce=reduce)
        outs[reduce] = dC.copy_to_host()
        assert not T.copy_to_host().any()
    ref_c = None if beta == 0 else C0
    assert np.all(np.abs(outs["kernel"] - _ref(A, B, ref_c, 0.75, beta))
                  <= _bound(A, B, ref_c, 0.75, beta))
    assert np.array_equal(outs["kernel"], outs["last block"])
    with pytest.raises(ValueError, match="reduce must be"):
        kern.launch(dA, dB, dC, split=2, reduce="atomic")


def test_partials_kernel_has_no_unsplit_epilogue_or_count():
    general = simt.kernel_source(T_M)
    part = simt.kernel_source(T_M, partials=True)
    assert "cuda.atomic.add(T" in general and "if split:" in general
    assert "cuda.atomic.add" not in part and "if split:" not in part
    assert "X = C" not in part and "def sgemm_" in part and "_partials(" in part


def test_planner_reduces_by_kernel_from_two_launch_min_s(monkeypatch):
    """A split plan predicted to take at least TWO_LAUNCH_MIN_S reduces in a kernel
    of its own, shorter ones in the last block: with the default (0, the graph's
    rule) every split plan, with the one-by-one launches' 30 us only the long ones;
    gemm() follows the plan either way, within the bound."""
    assert launch.TWO_LAUNCH_MIN_S == 0.0
    p = launch.plan_launch(35, 700, 2048)
    assert p.split > 1 and p.reduce == "kernel" and "reduced by a kernel" in p.summary()
    assert launch.plan_launch(4096, 4096, 4096).reduce == ""
    monkeypatch.setattr(launch, "TWO_LAUNCH_MIN_S", 30e-6)
    p = launch.plan_launch(1024, 1024, 1024)
    assert p.split > 1 and p.predicted_s >= 30e-6 and p.reduce == "kernel"
    p = launch.plan_launch(35, 700, 2048)
    assert p.split > 1 and p.predicted_s < 30e-6
    assert p.reduce == "last block" and "reduced by the last block" in p.summary()
    monkeypatch.setattr(launch, "TWO_LAUNCH_MIN_S", 0.0)
    launch.clear_plans()
    A, B, C0 = _operands(24, 40, 64, 9)
    dC = cuda.to_device(C0)
    front.gemm(cuda.to_device(A), cuda.to_device(B), dC, alpha=1.5, beta=0.5, tile=T_M,
               split=3)
    assert front.gemm.last_plan.reduce == "kernel"
    assert np.all(np.abs(dC.copy_to_host() - _ref(A, B, C0, 1.5, 0.5))
                  <= _bound(A, B, C0, 1.5, 0.5))
    launch.clear_plans()


# -- the planner (pure Python) ----------------------------------------------------------

def test_busiest_sm_rounds():
    assert busiest_sm_rounds(1024, 2) == [2, 2, 2, 2]          # 1024/132 -> 8 per SM
    assert busiest_sm_rounds(6, 2) == [1]
    assert busiest_sm_rounds(891, 6) == [6, 1]                 # ceil(891/132) = 7
    assert busiest_sm_rounds(0, 3) == []
    with pytest.raises(ValueError):
        busiest_sm_rounds(5, 0)


def test_planner_hand_worked_four_sms():
    """128x128x4096, DEFAULT_TILE (2 blocks/SM at its 128-register cap), 4 SMs.
    rate = 128 FMA/clk x 1.98 GHz x 0.70 = 177.408 GFMA/s per SM; a block of 8 warps
    runs at that rate alone (>= 6 warps). Split s: kslice = roundup(ceil(4096/s), 8).
      s=1: 1 block, 128*128*4096/177.408e9 + 1.0 us = 378.27 + 1.0 = 379.27 us
      s=4: 4 blocks, one per SM: 94.57 + 1.0 us; reduce (8*4 + 4)*128*128 B / 3 TB/s
           + 2 us = 2.20 us -> 97.77 us (the fastest)
      s=8: 8 blocks, 2 per SM at once: 2*128*128*512/177.408e9 + 1.0 = 95.57 us;
           reduce 2.37 us -> 97.94 us (within 2%: tie, the smaller split wins)
      s=16: 2 rounds of 2: 2*(47.28 + 1.0) = 96.57 us + 2.72 us = 99.29 us (within
           2% too, and a larger split)
    """
    lim = SmLimits(name="four", sm_count=4)
    p = launch.plan_launch(128, 128, 4096, tile=DEFAULT_TILE, limits=lim)
    assert (p.split, p.kslice, p.grid, p.blocks, p.blocks_per_sm) == (4, 1024, (1, 1, 4), 4, 2)
    assert p.rounds == (1,) and p.waves == pytest.approx(4 / (2 * 4))
    assert p.predicted_s == pytest.approx(97.77e-6, rel=1e-3)
    one = launch.plan_launch(128, 128, 4096, tile=DEFAULT_TILE, split=1, limits=lim)
    assert one.predicted_s == pytest.approx(379.27e-6, rel=1e-3)


def test_planner_on_h200_shapes():
    # 35x700x2048 with the 128x128 tile split 4: ceil(700/128) = 6 x ceil(35/128) = 1
    # x 4 = 24 blocks; 2 per SM on 132 SMs: 24/264 waves
    p = launch.plan_launch(35, 700, 2048, tile=DEFAULT_TILE, split=4)
    assert (p.grid, p.blocks, p.kslice) == ((6, 1, 4), 24, 512)
    assert p.waves == pytest.approx(24 / 264)
    # shape-adaptive: without split-K no candidate gives 132 blocks (<= 11 tiles); the
    # plan splits K 12 ways over the 8x4 thread tile's 64x64 blocks: ceil(700/64) = 11
    # x ceil(35/64) = 1 x 12 = 132 blocks, kslice roundup(ceil(2048/12) = 171, 8) = 176
    auto = launch.plan_launch(35, 700, 2048)
    assert ((auto.tile.tm, auto.tile.tn, auto.tile.bm, auto.tile.bn), auto.split,
            auto.blocks, auto.kslice) == ((8, 4, 64, 64), 12, 132, 176)
    sk = launch.plan_launch(128, 1500, 1280)
    assert sk.split > 1
    # 4096^3: the 128x256 tile (the fastest measured on the H200): 16 x 32 = 512 blocks,
    # 1 per SM (242 registers): 512/132 = 3.88 waves, no split
    big = launch.plan_launch(4096, 4096, 4096)
    assert ((big.tile.bm, big.tile.bn), big.split, big.blocks) == ((128, 256), 1, 512)
    assert big.waves == pytest.approx(512 / 132)
    # with the 128x128 tile: 32 x 32 = 1024 blocks, 2 per SM: 1024/264 = 3.88 waves
    mid = launch.plan_launch(4096, 4096, 4096, tile=DEFAULT_TILE)
    assert (mid.split, mid.blocks) == (1, 1024) and mid.waves == pytest.approx(1024 / 264)
    assert launch.plan_launch(35, 700, 2048, alpha_zero=True).split == 1
    assert launch.plan_launch(64, 64, 0).split == 1


def test_planner_counts_the_epilogue_reading_c():
    """beta != 0, unsplit: C_LOAD_BATCH_S (0.75 us) per round per batch of C loads.
    2048^3, 8x16 in 128x256 blocks: 8 x 16 = 128 blocks, one per SM, one round; one
    float4 group at a time, 8*16/4 = 32 batches -> 24 us more. 3072x1500x1024, 8x8 in
    64x128 blocks: 12 x 48 = 576 blocks, 3 per SM: the busiest SM runs 5 (rounds of 3
    and 2); 4 rows a chunk, 8/4 = 2 batches -> 2 * 2 * 0.75 = 3 us more."""
    big, mid = launch.AUTO_TILES[0], launch.AUTO_TILES[2]
    assert (launch.c_load_batches(big), launch.c_load_batches(mid)) == (32, 2)
    for (m, n, k), t, extra in (((2048, 2048, 2048), big, 24e-6),
                                ((3072, 1500, 1024), mid, 3e-6)):
        p0, p1 = (launch.plan_launch(m, n, k, tile=t, split=1, reads_c=rc)
                  for rc in (False, True))
        assert p1.predicted_s - p0.predicted_s == pytest.approx(extra, rel=1e-6)
    assert launch.plan_launch(3072, 1500, 1024, tile=mid, split=1).rounds == (3, 2)


def test_planner_errors():
    with pytest.raises(ValueError, match="no warp tile"):
        launch.plan_launch(64, 64, 4096, tile=LEGACY_TILE, split=2)
    with pytest.raises(ValueError, match="m must be"):
        launch.plan_launch(-1, 4, 4)
    with pytest.raises(ValueError, match="split"):
        launch.plan_launch(4, 4, 4, split=0)
    with pytest.raises(TypeError, match="split"):
        launch.plan_launch(4, 4, 4, split=1.5)
    with pytest.raises(TypeError, match="GpuTile"):
        launch.plan_launch(4, 4, 4, tile="avx2_6x16")
    with pytest.raises(ValueError, match="sm_count"):
        launch.plan_launch(4, 4, 4, limits=SmLimits(name="none"))
    # 1024x1024 split 32: 32 x 4 MiB of fp32 partial sums = 128 MiB > the 64 MiB limit
    with pytest.raises(ValueError, match=r"split 32 for 1024x1024x1024 needs 128 MiB"):
        launch.plan_launch(1024, 1024, 1024, tile=DEFAULT_TILE, split=32)


# -- call overhead: the plan cache --------------------------------------------------------

def test_plan_cache():
    launch.clear_plans()
    A, B, C0 = _operands(16, 16, 8, 3)
    dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C0)
    front.gemm(dA, dB, dC, tile=T_M)
    first = front.gemm.last_plan
    r1 = launch.runner(16, 16, 8, T_M, None, "vec", False, False, launch.device_limits())
    assert launch.cached_runners() == 1
    front.gemm(dA, dB, dC, tile=T_M)                    # same key: nothing new
    assert front.gemm.last_plan is first and launch.cached_runners() == 1
    assert launch.runner(16, 16, 8, T_M, None, "vec", False, False,
                         launch.device_limits()) is r1
    front.gemm(dA, dB, dC, beta=1.0, tile=T_M)          # C is read: another plan
    assert launch.cached_runners() == 2
    assert r1.path == ("numba dispatcher" if SIM else "cuGraphLaunch"), r1.fast_error
    launch.clear_plans()
    assert launch.cached_runners() == 0


@pytest.mark.skipif(SIM, reason="the CUDA graph launch needs a GPU")
def test_graph_launch_follows_changing_operands_and_scalars():
    """Runner.run_fast launches a CUDA graph whose nodes hold the parameter values
    of the last call: calls that change the operands, alpha or beta (or repeat them)
    must each get their own C, for a one-launch plan and a two-launch one (split-K
    reduced by the reduction kernel)."""
    seq = [(0, 1.0, 0.5), (0, 1.0, 0.5), (1, 1.0, 0.5), (1, 2.0, 0.5), (1, 2.0, -1.0),
           (0, 2.0, -1.0), (0, 2.0, -1.0)]
    for m, n, k in ((64, 64, 64), (512, 512, 4096)):
        launch.clear_plans()
        ops = [_operands(m, n, k, 40 + j) for j in (0, 1)]
        dev = [[cuda.to_device(x) for x in o] for o in ops]
        for j, alpha, beta in seq:
            A, B, C0 = ops[j]
            dA, dB, dC = dev[j]
            dC.copy_to_device(C0)
            front.gemm(dA, dB, dC, alpha=alpha, beta=beta)
            err = np.abs(dC.copy_to_host() - _ref(A, B, C0, alpha, beta))
            assert np.all(err <= _bound(A, B, C0, alpha, beta)), (m, j, alpha, beta)
        p = front.gemm.last_plan
        r = launch.runner(m, n, k, None, None, "vec", False, True, launch.device_limits())
        assert r.plan is p and r.path == "cuGraphLaunch", r.fast_error
        assert (p.reduce == "kernel") == (m == 512) and (r.rdrv is not None) == (m == 512)
    launch.clear_plans()


def test_auto_tile_in_the_simulator():
    """tile=None: the planner's choice (here a 64-row candidate, k too short to
    split), on a shape that is not a multiple of it."""
    A, B, _ = _operands(9, 20, 12, 4)
    got = front.gemm(A, B)
    p = front.gemm.last_plan
    assert p.tile in launch.AUTO_TILES and p.split == 1
    assert np.all(np.abs(got - _ref(A, B, None, 1.0, 0.0)) <= _bound(A, B, None, 1.0, 0.0))


def test_gemm_split_argument_errors():
    A = np.ones((4, 8), np.float32)
    B = np.ones((8, 4), np.float32)
    with pytest.raises(ValueError, match="split"):
        front.gemm(A, B, split=0)
    with pytest.raises(TypeError, match="split"):
        front.gemm(A, B, split="2")
    with pytest.raises(ValueError, match="no warp tile"):
        front.gemm(A, B, tile=LEGACY_TILE, split=2)
    with pytest.raises(TypeError, match="B must be float32"):
        front.gemm(A, B.astype(np.float64))

    class Fake:                       # a device array of 70000^2 floats (never read)
        def __init__(self, shape):
            self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4",
                                             "data": (0, False), "version": 3}
    with pytest.raises(ValueError, match="2\\*\\*32 elements"):
        front.gemm(Fake((70000, 70000)), Fake((70000, 8)))
    with pytest.raises(TypeError, match="A must be float32"):
        f = Fake((4, 4))
        f.__cuda_array_interface__["typestr"] = "<f8"
        front.gemm(f, B)


class _TorchLike:
    """What gemm() reads of a PyTorch tensor (its type's module names torch), for the
    checks that run before any GPU work."""
    __module__ = "torch._test_stand_in"

    def __init__(self, shape, dtype="torch.float32", is_cuda=True, requires_grad=False):
        self.shape, self.dtype, self.is_cuda = shape, dtype, is_cuda
        self.requires_grad, self.device = requires_grad, "cuda:0" if is_cuda else "cpu"

    def data_ptr(self):
        return 0

    def stride(self):
        return (self.shape[1], 1)


def test_gemm_refuses_pytorch_tensors_it_cannot_use():
    """A PyTorch tensor on the CPU, one that requires grad, one of another dtype or
    rank: a clear error naming the operand, before any launch."""
    ok = _TorchLike((4, 4))
    with pytest.raises(TypeError, match="B is a PyTorch tensor on cpu, not on a CUDA"):
        front.gemm(ok, _TorchLike((4, 4), is_cuda=False))
    with pytest.raises(ValueError, match="A requires grad.*detach"):
        front.gemm(_TorchLike((4, 4), requires_grad=True), ok)
    with pytest.raises(TypeError, match="C must be float32, got torch.float64"):
        front.gemm(ok, ok, _TorchLike((4, 4), "torch.float64"))
    with pytest.raises(ValueError, match="A must be 2-D"):
        front.gemm(_TorchLike((4, 4, 4)), ok)
    with pytest.raises(ValueError, match="inner dimensions differ"):
        front.gemm(_TorchLike((4, 5)), ok)


def test_gemm_of_a_transposed_device_view_returns_a_new_device_c():
    """A transposed (non-contiguous) device A and no C: staged through a C-ordered copy
    and returned as a new device array (the fast path must not leave a C behind when
    it cannot take the call)."""
    A, B, C0 = _operands(20, 16, 12, 21)
    dA = cuda.to_device(np.ascontiguousarray(A.T)).T
    out = front.gemm(dA, cuda.to_device(B))
    got = out.copy_to_host()
    assert got.shape == (20, 16)
    assert np.all(np.abs(got - _ref(A, B, C0, 1.0, 0.0)) <= _bound(A, B, C0, 1.0, 0.0))


@pytest.mark.skipif(SIM, reason="PyTorch's CUDA tensors need a GPU")
def test_gemm_on_pytorch_tensors():
    """gemm() on CUDA tensors read from their own attributes: plain, transposed (staged
    through a contiguous copy) and offset views (the pointer includes the storage
    offset), C updated in place or returned, within the float64 bound."""
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cuda").manual_seed(3)
    flat = torch.rand(8000, device="cuda", generator=g) - 0.5
    views = {"plain": (torch.rand(70, 52, device="cuda", generator=g) - 0.5,
                       torch.rand(52, 36, device="cuda", generator=g) - 0.5),
             "transposed": ((torch.rand(52, 70, device="cuda", generator=g) - 0.5).t(),
                            torch.rand(52, 36, device="cuda", generator=g) - 0.5),
             # contiguous views at 32 and 12 bytes into their storage (vec, scalar)
             "offset": (flat[8:8 + 70 * 52].view(70, 52), flat[4003:4003 + 52 * 36].view(52, 36))}
    for nm, (A, B) in views.items():
        C0 = torch.rand(70, 36, device="cuda", generator=g)
        C = C0.clone()
        assert front.gemm(A, B, C, alpha=1.5, beta=0.5) is C
        a, b, c0 = (x.cpu().numpy() for x in (A, B, C0))
        err = np.abs(C.cpu().numpy() - _ref(a, b, c0, 1.5, 0.5))
        assert np.all(err <= _bound(a, b, c0, 1.5, 0.5)), nm
        new = front.gemm(A, B)
        assert np.all(np.abs(new.copy_to_host() - _ref(a, b, c0, 1.0, 0.0))
                      <= _bound(a, b, c0, 1.0, 0.0)), nm
    with pytest.raises(TypeError, match="not on a CUDA device"):
        front.gemm(A, B.cpu())
    launch.clear_plans()


# -- port and the GPU sweep hook ---------------------------------------------------------

def test_port_warp_options():
    assert parse_warp("auto") == "auto" and parse_warp("none") is None
    assert parse_warp("64x32") == (64, 32)
    with pytest.raises(ValueError, match="--warp"):
        parse_warp("64")
    p = gp.plan("sve_8x2v", warp=(64, 32))
    assert (p.tile.wm, p.tile.wn, p.tile.lm, p.tile.ln) == (64, 32, 8, 4)
    with pytest.raises(ValueError, match="lanes"):
        gp.plan("sve_8x2v", warp=(64, 64))
    rep = gp.port("sve_8x2v", compile=False)
    shapes = {(lp["m"], lp["n"], lp["k"]): lp for lp in rep["launch"]}
    assert shapes[(35, 700, 2048)]["split"] > 1 and shapes[(4096, 4096, 4096)]["split"] == 1


@pytest.mark.skipif(not SIM, reason="a GPU is present: the sweep would run")
def test_sweep_gpu_without_a_gpu_exits_2(capsys):
    from microkernel.cli import main
    assert main(["sweep", "--gpu", "--rounds", "2"]) == 2
    err = capsys.readouterr().err
    assert "sweep --gpu" in err and ("simulator" in err or "no CUDA GPU" in err)


def _offline_ptx_available():
    code = ("import numpy as np; np.row_stack = getattr(np, 'row_stack', np.vstack);"
            "from cuda.bindings import nvrtc; nvrtc.nvrtcVersion()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"))
    return r.returncode == 0 and gp._find_ptxas() is not None


@pytest.mark.skipif(not _offline_ptx_available(), reason="no NVRTC/ptxas for offline PTX")
@pytest.mark.parametrize("expr, cap", [
    ("tiles.DEFAULT_TILE", 128),
    ("tiles.GpuTile(8, 8, 64, 128, 8, wm=32, wn=64, min_blocks=3, stages=3, copy='async')",
     168)], ids=["default", "cp.async 3 stages"])
def test_tile_compiles_without_spills_offline(expr, cap):
    """numba -> PTX -> ptxas for sm_90, no GPU: DEFAULT_TILE's float4 variant fits its
    128-register cap (2 blocks of 256 threads per SM) with no local memory; so does a
    cp.async tile its 168 (3 blocks of 128 threads), and its shared memory is the
    model's (3 stages)."""
    code = ("import json; from microkernel.gpu import port, kernel, tiles;"
            f"t = {expr}; r = port.ptxas_resources(kernel.kernel_for(t));"
            "print(json.dumps(dict(r, model_smem=t.smem_bytes) if r else None))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"), timeout=300)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res is not None, r.stderr[-2000:]
    assert res["regs"] <= cap and res["local_bytes"] == 0 and res["spill_stores"] == 0
    assert res["shared_bytes"] == res["model_smem"]


def test_driver_launcher_packs_the_parameters_once(monkeypatch):
    """The cuLaunchKernel path's parameter block (no GPU needed to build it): one
    8-byte slot per kernel parameter, the pointer array holds the slots' addresses,
    a float32 lands in the low 4 bytes of its slot; a fake dispatcher stands in for
    the compiled kernel."""
    pytest.importorskip("cuda.bindings")
    from types import SimpleNamespace
    from microkernel.gpu import launchers
    fn = SimpleNamespace(handle="H")
    over = SimpleNamespace(_codelibrary=SimpleNamespace(get_cufunc=lambda: fn))
    disp = SimpleNamespace(compile=lambda sig: None, overloads={(): over})
    import numba.cuda.core.sigutils as su
    monkeypatch.setattr(su, "normalize_signature", lambda sig: ((), None))
    d = launchers.DriverLauncher(disp, "void()", (3, 2, 1), 128, 5)
    assert d.handle == "H" and d._dims == (3, 2, 1, 128, 1, 1)
    d.set_int(1, 0xDEADBEEF)
    d.set_f32(3, 1.5)
    base = d.slots.ctypes.data
    assert d._ptrs.tolist() == [base + 8 * i for i in range(5)]
    raw = d.slots.view(np.uint8).reshape(5, 8)
    assert d.slots[1] == 0xDEADBEEF
    assert raw[3, :4].view(np.float32)[0] == 1.5 and not raw[3, 4:].any()


def test_gpu_sweep_text_says_when_rounds_were_too_few():
    """The GPU sweep's text names a tie for want of rounds as such (stats.Verdict's
    too_few), and a tie on the evidence as not shown slower."""
    from microkernel.gpu.sweep import render_text
    res = {"device": "X", "sm_count": 1, "shapes": ["s"], "rows": [], "per_shape": [],
           "race": {"rounds": 3, "seconds": 1.0, "stopped": "budget", "margin": 0.0,
                    "level": 0.95}}
    v = {"leader": "a", "ties": ["a", "b"], "margin": 0.0, "level": 0.95, "rounds": 3,
         "rounds_needed": 6, "too_few": True}
    assert "3 rounds cannot show a difference at 95%: that needs >= 6" in render_text(
        {**res, "verdict": v})
    text = render_text({**res, "verdict": {**v, "rounds": 9, "too_few": False}})
    assert "tie: a, b (not shown slower)" in text and "cannot show" not in text
