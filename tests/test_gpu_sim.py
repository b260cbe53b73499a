"""microkernel.gpu under numba's CUDA simulator (CI has no GPU).

NUMBA_ENABLE_CUDASIM must be set before numba is first imported, so it is set by
tests/_cudasim.py, imported first (``setdefault``: run with
``NUMBA_ENABLE_CUDASIM=0`` on a machine with a GPU to run the very same tests on
the real device). The module is skipped when numba-cuda (the ``[gpu]`` extra) is
not installed, and when numba was already imported without the simulator and no
GPU is present.

The simulator runs every CUDA thread as a Python thread, one block at a time, so
the kernels here use small block tiles (16 threads) and small shapes that are not
multiples of them; the full-size tiles are exercised on the H200 by
bench/gpu_h200.py. Simulator-only limits are guarded by the kernel itself (no
``alignment=`` for shared arrays; shared arrays on separate source lines; local
arrays initialised explicitly).
"""
import json

# first: sets NUMBA_ENABLE_CUDASIM; skips the module without numba-cuda or a device
from _cudasim import cuda, reference as _ref, error_bound as _bound

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from microkernel.gpu import kernel as gk  # noqa: E402
from microkernel.gpu import occupancy as occ  # noqa: E402
from microkernel.gpu import port as gp  # noqa: E402
from microkernel.tile import TileSpec, pack_a, pack_b, reference_ukernel  # noqa: E402

#: Small tiles the simulator can afford: the float4-group layout, the contiguous
#: (literal CPU tile) layout with an uneven thread tile, the single-stage loop and
#: the register-pipelined inner loop.
SIM_TILES = [
    gk.GpuTile(4, 4, 16, 16, 4),
    gk.GpuTile(2, 4, 8, 16, 4, layout="contiguous"),
    gk.GpuTile(4, 4, 16, 16, 4, stages=1),
    gk.GpuTile(4, 4, 16, 16, 4, pipeline=True),
]


@pytest.mark.parametrize("tile", SIM_TILES, ids=lambda t: t.name)
def test_validation_catalogue(tile):
    """17x33x5, 1x1x1, 64x40x3, 24^3, alpha/beta, NaN in C with beta=0, NaN in A
    and B with alpha=0, K=0, M=0, N=0; guard elements around C (no OOB writes)."""
    results = gp.validate(tile, gp.SIM_CASES)
    bad = [r for r in results if not r["ok"]]
    assert not bad, bad
    labels = {r["label"] for r in results}
    assert {"17x33x5", "1x1x1", "64x40x3", "24x24x24", "beta=0 NaN C"} <= labels


def test_gemm_numpy_front_end():
    rng = np.random.default_rng(1)
    tile = SIM_TILES[0]
    A = rng.standard_normal((21, 13)).astype(np.float32)
    B = rng.standard_normal((13, 18)).astype(np.float32)
    C = gk.gemm(A, B, tile=tile)                         # new array, beta ignored
    assert isinstance(C, np.ndarray) and C.shape == (21, 18) and C.dtype == np.float32
    assert np.all(np.abs(C - _ref(A, B, None, 1.0, 0.0)) <= _bound(A, B, None, 1.0, 0.0))
    C0 = np.asfortranarray(rng.standard_normal((21, 18)).astype(np.float32))
    C1 = C0.copy(order="F")
    out = gk.gemm(A, B, C1, alpha=0.5, beta=2.0, tile=tile)  # in place, non-contiguous
    assert out is C1
    assert np.all(np.abs(C1 - _ref(A, B, C0, 0.5, 2.0)) <= _bound(A, B, C0, 0.5, 2.0))
    # a tuple tile and a NaN-filled C with beta = 0
    C2 = np.full((21, 18), np.nan, np.float32)
    gk.gemm(A, B, C2, beta=0.0, tile=(4, 4, 16, 16, 4))
    assert np.isfinite(C2).all()


def test_gemm_device_arrays():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((9, 7)).astype(np.float32)
    B = rng.standard_normal((7, 11)).astype(np.float32)
    C0 = rng.standard_normal((9, 11)).astype(np.float32)
    dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C0)
    out = gk.gemm(dA, dB, dC, alpha=-1.0, beta=0.5, tile=SIM_TILES[0])
    assert out is dC
    got = dC.copy_to_host()
    assert np.all(np.abs(got - _ref(A, B, C0, -1.0, 0.5)) <= _bound(A, B, C0, -1.0, 0.5))
    new = gk.gemm(dA, dB, tile=SIM_TILES[0])              # device in -> device out
    assert not isinstance(new, np.ndarray)
    assert np.allclose(new.copy_to_host(), A @ B, rtol=1e-5, atol=1e-5)


def test_gemm_empty_and_k0():
    tile = SIM_TILES[0]
    A = np.ones((0, 3), np.float32)
    B = np.ones((3, 4), np.float32)
    assert gk.gemm(A, B, tile=tile).shape == (0, 4)
    C = np.full((5, 4), 3.0, np.float32)
    gk.gemm(np.ones((5, 0), np.float32), np.ones((0, 4), np.float32), C, beta=0.5, tile=tile)
    assert np.all(C == 1.5)


@pytest.mark.parametrize("args, exc", [
    ((np.ones((2, 2)), np.ones((2, 2), np.float32)), TypeError),          # float64
    (([[1.0]], np.ones((1, 1), np.float32)), TypeError),                  # a list
    ((np.ones((2, 2, 2), np.float32), np.ones((2, 2), np.float32)), ValueError),
    ((np.ones((2, 3), np.float32), np.ones((2, 2), np.float32)), ValueError),
])
def test_gemm_argument_errors(args, exc):
    with pytest.raises(exc):
        gk.gemm(*args, tile=SIM_TILES[0])


def test_gemm_c_errors():
    A = np.ones((2, 3), np.float32)
    B = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="C must be 2x4"):
        gk.gemm(A, B, np.zeros((4, 2), np.float32), tile=SIM_TILES[0])
    with pytest.raises(TypeError, match="float32"):
        gk.gemm(A, B, np.zeros((2, 4)), tile=SIM_TILES[0])
    with pytest.raises(TypeError, match="alpha"):
        gk.gemm(A, B, alpha="2", tile=SIM_TILES[0])
    C = np.zeros((2, 4), np.float32)
    C.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gk.gemm(A, B, C, tile=SIM_TILES[0])


@pytest.mark.parametrize("kw, match", [
    (dict(tm=3, tn=4, bm=16, bn=16, bk=4), "not a multiple"),
    (dict(tm=4, tn=4, bm=16, bn=16, bk=4, threads=32), "threads=32"),
    (dict(tm=1, tn=1, bm=64, bn=64, bk=4), "1024"),
    (dict(tm=4, tn=4, bm=32, bn=16, bk=3), "evenly"),
    (dict(tm=8, tn=8, bm=256, bn=256, bk=32), "shared memory"),
    (dict(tm=0, tn=4, bm=16, bn=16, bk=4), "positive"),
    (dict(tm=4, tn=4, bm=16, bn=16, bk=3, pipeline=True), "even bk"),
    (dict(tm=4, tn=4, bm=16, bn=16, bk=4, min_blocks=0), "min_blocks"),
    (dict(tm=8, tn=8, bm=256, bn=128, bk=8, min_blocks=8), "fewer than 32"),
])
def test_tile_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        gk.GpuTile(**kw)


def test_kernel_cache_and_names():
    k1 = gk.make_sgemm(4, 4, 16, 16, 4)
    assert gk.make_sgemm(4, 4, 16, 16, 4, 16) is k1
    assert k1.tile.name == "gpu_4x4_b16x16x4" and k1.tile.threads == 16
    assert gk.make_sgemm(4, 4, 16, 16, 4, stages=1) is not k1
    assert gk.LEGACY_TILE.name == "gpu_8x8_b128x128x8_p2_mb2"
    assert gk.DEFAULT_TILE.name == "gpu_8x8_b128x128x8_w32x64_mb2"
    # register caps: none for one block of <= 256 threads; 65536/512 = 128
    assert gk.max_registers(gk.GpuTile(8, 8, 128, 128, 8)) is None
    assert gk.max_registers(gk.GpuTile(8, 8, 128, 256, 8)) == 128
    assert gk.max_registers(gk.GpuTile(8, 8, 128, 128, 8, min_blocks=2)) == 128
    assert gk.GpuTile(8, 8, 128, 128, 8, pipeline=True, min_blocks=2).name == \
        "gpu_8x8_b128x128x8_p2_mb2"


def test_thread_tile_is_the_cpu_micro_kernel():
    """The C values one thread computes are tile.reference_ukernel's on the same
    rows of A and columns of B (the port of scalar_4x4: a 4x4 tile per thread)."""
    spec = TileSpec("scalar", 4, 4)
    p = gp.plan(spec, threads=32)
    assert (p.tile.tm, p.tile.tn) == (4, 4) and p.split == (1, 1)
    rng = np.random.default_rng(3)
    m, n, k = p.tile.bm, p.tile.bn, 6
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = gk.gemm(A, B, tile=p.tile)
    t = p.tile
    for tid in (0, t.threads - 1, 10):
        rows, cols = t.thread_rows(tid), t.thread_cols(tid)
        c = np.zeros((t.tm, t.tn), np.float32)
        reference_ukernel(spec, k, 1.0, pack_a(A[rows], t.tm)[0], pack_b(B[:, cols], t.tn)[0],
                          0.0, c)
        np.testing.assert_allclose(C[np.ix_(rows, cols)], c, rtol=1e-5, atol=1e-6)


# -- the resource model and the port (pure Python) ------------------------------------

def test_occupancy_sm90_rules():
    # 210 registers (the plain 8x8-tile kernel measured on the H200): 6720 -> 6912 per warp,
    # 2 warps per sub-partition, 8 per SM: one 256-thread block.
    o = occ.occupancy(210, 256, 8 * 1024)
    assert (o.blocks_per_sm, o.warps_per_sm, o.limiter) == (1, 8, "registers")
    assert occ.regs_per_warp(210) == 6912
    o = occ.occupancy(128, 256, 16640)
    assert (o.blocks_per_sm, o.warps_per_sm) == (2, 16)
    o = occ.occupancy(64, 256, 0)
    assert (o.blocks_per_sm, o.warps_per_sm, o.fraction) == (4, 32, 0.5)
    o = occ.occupancy(32, 64, 40 * 1024)                   # (40 KB + 1 KB) -> 5 blocks
    assert (o.blocks_per_sm, o.limiter) == (5, "shared")
    o = occ.occupancy(16, 32, 0)                            # 32 blocks per SM at most
    assert (o.blocks_per_sm, o.limiter) == (32, "blocks")
    o = occ.occupancy(32, 1024, 0)
    assert (o.blocks_per_sm, o.limiter) == (2, "registers")   # regs and warps tie
    assert occ.occupancy(256, 128).error and occ.occupancy(256, 128).blocks_per_sm == 0
    assert occ.occupancy(32, 128, 50 * 1024).error                  # > 48 KB static
    assert occ.occupancy(32, 128, 50 * 1024, static_smem=False).blocks_per_sm == 4
    with pytest.raises(ValueError):
        occ.occupancy(0, 128)


def test_plan_builtin_tiles():
    p = gp.plan("avx512_8x16")
    assert (p.tile.tm, p.tile.tn, p.split) == (8, 16, (1, 1))
    # warp tile 64x64 (8x4 lanes: the squarest), no register double buffering; its
    # 192 estimated registers allow one block of 256 threads (no cap needed)
    assert (p.tile.wm, p.tile.wn) == (64, 64) and not p.tile.pipeline and p.tile.min_blocks == 1
    p8 = gp.plan("sve_8x2v")            # pipelined, registers capped for 2 blocks/SM
    assert p8.tile.name == "gpu_8x8_b128x128x8_w32x64_mb2" and p8.est_regs == 116
    # the original layout on request (no warp tile)
    assert gp.plan("sve_8x2v", warp=None).tile.name == "gpu_8x8_b128x128x8_p2_mb2"
    assert not gp.plan("scalar_4x4").tile.pipeline       # too small to pipeline
    assert p.tile.threads == 256 and p.est_regs <= 255 and p.occupancy.blocks_per_sm >= 1
    assert "8x16 per thread" in p.notes[0]
    big = gp.plan("avx512_12x32")                          # 384 accumulators: split
    assert big.threads_per_cpu_tile > 1 and big.est_regs <= 255 - gp.REG_MARGIN
    sve = gp.plan("sve_8x2v")                               # 2 vectors at 128 bits
    assert (sve.nr, sve.tile.tn, sve.vector_bits) == (8, 8, 128)
    assert gp.plan("sve_8x2v", vector_bits=512).nr == 32
    for name in ("avx2_6x16", "neon_8x12", "scalar_4x4"):
        q = gp.plan(name)
        assert q.tile.smem_bytes <= occ.STATIC_SHARED_LIMIT and q.occupancy.blocks_per_sm >= 1
    with pytest.raises(ValueError):
        gp.plan("avx512_8x15")


def test_run_port_cli(capsys):
    import argparse
    from microkernel.commands import port as port_cmd
    ap = argparse.ArgumentParser()
    port_cmd.add_arguments(ap)
    assert port_cmd.run(ap.parse_args(["avx512_8x16", "--json", "--no-compile"])) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["plan"]["thread_tile"] == [8, 16]
    assert rep["plan"]["est_occupancy"]["limiter"] == "registers"
    assert port_cmd.run(ap.parse_args(["avx512_8x16", "--no-compile"])) == 0
    out = capsys.readouterr().out
    assert "gpu_8x16_b128x256x8_w64x64" in out and "registers per thread" in out
    assert "warp tile" in out
    assert port_cmd.run(ap.parse_args(["nosuch_1x1", "--json", "--no-compile"])) == 2


def test_port_report_with_validation():
    """``port --validate`` end to end on a small, simulator-sized plan."""
    rep = gp.port("scalar_4x4", validate_cases=True, threads=32, offline=False)
    assert rep["validation"] and all(r["ok"] for r in rep["validation"])
