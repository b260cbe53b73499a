"""The tensor-core kernels under numba's CUDA simulator (and, with
NUMBA_ENABLE_CUDASIM=0 on a machine with a GPU, the very same tests on the device:
bench/gpu_mma.py runs them there).

Under the simulator, mma/ldmatrix/cp.async are the Python twins of the
intrinsics (the numpy fragment model); the kernel source, its lane arithmetic,
shared-memory layouts, pipeline and epilogue are the real ones. Small block tiles
(2 warps) and shapes that are not multiples of them keep this under a minute.
"""
# first: sets NUMBA_ENABLE_CUDASIM; skips the module without numba-cuda or a device
from _cudasim import SIM, cuda

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from microkernel.gpu import fragments as F  # noqa: E402
from microkernel.gpu import mma_intrinsics, mma_kernel as MK, mma_probe, mma_tile as T  # noqa: E402
from microkernel.gpu.mma_gemm import mma_gemm  # noqa: E402

#: Simulator-sized tiles: every precision, every shared-memory layout, 2 and 3 stages,
#: MI and NI > 1, threads that do not divide the chunks of a slice.
SIM_TILES = [
    T.MmaTile("f16", 16, 16, 2, 1, 16, 2, "swizzle"),
    T.MmaTile("f16", 32, 16, 1, 2, 32, 3, "none"),
    T.MmaTile("bf16", 16, 32, 2, 1, 16, 3, "pad"),
    T.MmaTile("tf32", 16, 16, 1, 2, 8, 2, "swizzle"),
    T.MmaTile("tf32", 32, 16, 1, 2, 16, 3, "pad"),
]
#: The pipelined main loop (hoisted offsets, cp.async before the math, the barrier
#: before the last k step): fragment double buffering with 2 and 3 k steps (odd:
#: the register sets swap), single buffering with 1 k step, dynamic shared
#: memory, the grouped grid order, the fast copy path for A and B (threads divide
#: the chunks) and the guarded one (they do not), and the simple loop with the
#: grouped order and dynamic shared memory.
PIPE_TILES = [
    T.MmaTile("f16", 16, 16, 2, 1, 32, 3, "swizzle", "pipelined", 2),
    T.MmaTile("f16", 32, 16, 1, 2, 48, 2, "none", "pipelined", 2),
    T.MmaTile("bf16", 16, 32, 2, 1, 16, 3, "pad", "pipelined", 1),
    T.MmaTile("tf32", 16, 16, 1, 2, 16, 2, "swizzle", "pipelined", 2, 2, True),
    T.MmaTile("tf32", 32, 16, 1, 2, 8, 4, "pad", "pipelined", 1, 1, True),
    T.MmaTile("f16", 16, 16, 2, 1, 16, 2, "swizzle", group_m=3, dynamic_smem=True),
]
DTYPE = {"f16": np.float16, "tf32": np.float32}


def _inputs(precision, m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    if precision == "bf16":
        ml = pytest.importorskip("ml_dtypes")
        return A.astype(ml.bfloat16), B.astype(ml.bfloat16)
    return A.astype(DTYPE[precision]), B.astype(DTYPE[precision])


def _rounded64(X, precision):
    """The values the tensor cores multiply, in float64 (tf32: cvt.rna)."""
    x = np.asarray(X).astype(np.float32)
    return (F.round_tf32(x) if precision == "tf32" else x).astype(np.float64)


def _check(C, A, B, C0, alpha, beta, precision):
    """|C - ref| <= 2 (K+2) 2^-24 (|alpha||A||B| + |beta||C0|), ref in float64 of
    the rounded inputs (products of f16/bf16/tf32 values are exact in fp32)."""
    A64, B64 = _rounded64(A, precision), _rounded64(B, precision)
    k = A64.shape[1]
    ref = alpha * (A64 @ B64)
    scale = abs(alpha) * (np.abs(A64) @ np.abs(B64))
    if beta != 0:
        ref = ref + beta * C0.astype(np.float64)
        scale = scale + abs(beta) * np.abs(C0.astype(np.float64))
    bound = 2.0 * (k + 2) * 2.0**-24 * scale
    err = np.abs(np.asarray(C, np.float64) - ref)
    assert np.isfinite(C).all()
    assert np.all(err <= bound), (float(err.max()), float(bound.max()))


@pytest.mark.parametrize("tile", SIM_TILES + PIPE_TILES, ids=lambda t: t.name)
def test_kernel_odd_shapes(tile):
    p = tile.precision
    shapes = [(37, 21, 45, 1.0, 0.0), (1, 1, 1, 1.0, 0.0), (33, 40, 7, -1.5, 0.5)]
    if tile in PIPE_TILES:         # several whole slices: the stages rotate, 3x3 blocks
        shapes.append((3 * tile.bm, 3 * tile.bn - 5, 5 * tile.bk + 3, 0.5, -1.0))
    for (m, n, k, alpha, beta) in shapes:
        A, B = _inputs(p, m, n, k, seed=m)
        C0 = np.random.default_rng(1).uniform(-1, 1, (m, n)).astype(np.float32)
        C = mma_gemm(A, B, C0.copy(), alpha=alpha, beta=beta, tile=tile)
        _check(C, A, B, C0, alpha, beta, p)


def test_blas_semantics():
    tile = SIM_TILES[0]
    A, B = _inputs("f16", 19, 21, 7)
    # beta == 0: NaN in C must not survive
    C = np.full((19, 21), np.nan, np.float32)
    mma_gemm(A, B, C, beta=0.0, tile=tile)
    _check(C, A, B, C, 1.0, 0.0, "f16")
    # alpha == 0: A and B are not read (NaN there) and C := beta*C
    An, Bn = A.copy(), B.copy()
    An[0, 0] = Bn[-1, -1] = np.nan
    C0 = np.arange(19 * 21, dtype=np.float32).reshape(19, 21)
    C = mma_gemm(An, Bn, C0.copy(), alpha=0.0, beta=2.0, tile=tile)
    assert np.array_equal(C, 2 * C0)
    C = mma_gemm(An, Bn, np.full((19, 21), np.nan, np.float32), alpha=0.0, beta=0.0, tile=tile)
    assert np.array_equal(C, np.zeros((19, 21), np.float32))
    # K == 0: C := beta*C
    C = mma_gemm(np.ones((9, 0), np.float16), np.ones((0, 11), np.float16),
                 np.full((9, 11), 3.0, np.float32), beta=0.5, tile=tile)
    assert np.all(C == 1.5)
    # M == 0 / N == 0: nothing touched, shapes kept
    assert mma_gemm(np.ones((0, 5), np.float16), np.ones((5, 7), np.float16),
                    tile=tile).shape == (0, 7)
    C = np.full((7, 0), 1.0, np.float32)
    assert mma_gemm(np.ones((7, 5), np.float16), np.ones((5, 0), np.float16), C,
                    tile=tile) is C
    # a new C (beta ignored), and a Fortran-ordered C updated in place
    new = mma_gemm(A, B, beta=5.0, tile=tile)
    assert isinstance(new, np.ndarray) and new.dtype == np.float32
    _check(new, A, B, new, 1.0, 0.0, "f16")
    Cf = np.asfortranarray(C0[:, :21].copy())
    out = mma_gemm(A, B, Cf, alpha=0.5, beta=-1.0, tile=tile)
    assert out is Cf
    _check(Cf, A, B, C0, 0.5, -1.0, "f16")


def test_device_arrays_and_unaligned_rows():
    """numba device arrays in and out; K = 13 and N = 11 (rows not 16-byte aligned on
    the device: repacked by the pad-copy kernel)."""
    tile = SIM_TILES[0]
    A, B = _inputs("f16", 20, 11, 13, seed=3)
    C0 = np.random.default_rng(4).uniform(-1, 1, (20, 11)).astype(np.float32)
    dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.to_device(C0)
    out = mma_gemm(dA, dB, dC, alpha=2.0, beta=1.0, tile=tile)
    assert out is dC
    _check(dC.copy_to_host(), A, B, C0, 2.0, 1.0, "f16")
    new = mma_gemm(dA, dB, tile=tile)
    assert not isinstance(new, np.ndarray)
    _check(new.copy_to_host(), A, B, C0, 1.0, 0.0, "f16")
    # tf32 from float32 device arrays, default precision from the dtype
    A32, B32 = _inputs("tf32", 9, 6, 10, seed=5)
    got = mma_gemm(cuda.to_device(A32), cuda.to_device(B32), tile=SIM_TILES[3])
    _check(got.copy_to_host(), A32, B32, None, 1.0, 0.0, "tf32")


@pytest.mark.parametrize("precision", ["f16", "bf16", "tf32"])
def test_fragment_placement(precision):
    """Each lane's registers after ldmatrix / ld.shared / cvt / mma equal the numpy
    model's, bit for bit (on the GPU: the hardware against the model)."""
    for name, (got, expected) in mma_probe.placement(precision).items():
        g = np.ascontiguousarray(got).view(np.uint32)
        e = np.ascontiguousarray(expected).view(np.uint32)
        assert g.shape == e.shape and np.array_equal(g, e), name


@pytest.mark.skipif(not SIM, reason="address tracing needs the simulator")
@pytest.mark.parametrize("tile", [SIM_TILES[0], SIM_TILES[2], SIM_TILES[4], PIPE_TILES[0],
                                  PIPE_TILES[2], PIPE_TILES[3]], ids=lambda t: t.name)
def test_kernel_addresses_match_the_model(tile):
    """The shared-memory offsets the kernel issues (recorded in the simulator) are
    those mma_tile.requests() prices, request by request, for every warp. (The
    pipelined loop loads the next slice's first fragments during the last k step
    even after the last slice: those loads, past the slice's, are not compared.)"""
    A, B = _inputs(tile.precision, tile.bm, tile.bn, tile.bk)
    with mma_intrinsics.trace() as tr:
        mma_gemm(A, B, tile=tile)
    bbase = -(-tile.a_layout.bytes // 128) * 128
    for warp in range(tile.warps):
        model = {r.name: list(r.addresses) for r in T.requests(tile, warp)}
        got = {}
        for (blk, w, op, n), addrs in tr.items():
            if w != warp or blk != (0, 0, 0):
                continue
            if op == "cp_async16":
                if n < tile.a_per:
                    got[f"A cp.async store #{n}"] = addrs
                else:
                    got[f"B cp.async store #{n - tile.a_per}"] = [a - bbase for a in addrs]
            elif n >= tile.ki * {"ldsm": tile.mi, "ldsm_trans": tile.ni // 2,
                                 "lds32": 2 * tile.ni}[op]:
                continue
            elif op == "ldsm":
                kk, mi = divmod(n, tile.mi)
                got[f"A ldmatrix.x4 mi={mi} kk={kk}"] = addrs
            elif op == "ldsm_trans":
                kk, p = divmod(n, tile.ni // 2)
                got[f"B ldmatrix.x4.trans p={p} kk={kk}"] = [a - bbase for a in addrs]
            elif op == "lds32":
                kk, rest = divmod(n, 2 * tile.ni)
                j, ni = divmod(rest, tile.ni)
                got[f"B ld.shared.b32 ni={ni} kk={kk} b{j}"] = [a - bbase for a in addrs]
        assert got == model, warp


def test_argument_errors():
    tile = SIM_TILES[0]
    h = np.ones((2, 3), np.float16)
    hb = np.ones((3, 4), np.float16)
    cases = [
        ((np.ones((2, 3)), hb), {}, TypeError, "A has dtype float64"),
        ((h, np.ones((3, 4), np.float32)), {}, TypeError, "B must be float16"),
        ((np.ones((2, 3), np.float32), hb), {"precision": "f16"}, TypeError, "A must be float16"),
        ((h, hb), {"precision": "int8"}, ValueError, "precision"),
        (([[1.0]], hb), {}, TypeError, "A must be a numpy array"),
        ((np.ones((2, 3, 1), np.float16), hb), {}, ValueError, "A must be 2-D"),
        ((h, np.ones((2, 4), np.float16)), {}, ValueError, "inner dimensions"),
        ((h, hb, np.zeros((4, 2), np.float32)), {}, ValueError, "C must be 2x4"),
        ((h, hb, np.zeros((2, 4))), {}, TypeError, "C must be float32"),
        ((h, hb), {"alpha": "2"}, TypeError, "alpha"),
        ((h, hb), {"tile": SIM_TILES[3]}, ValueError, "is for tf32"),
        ((h, hb), {"tile": (16, 16)}, TypeError, "tile must be an MmaTile"),
    ]
    for args, kw, exc, match in cases:
        kw = dict({"tile": tile}, **kw)
        with pytest.raises(exc, match=match):
            mma_gemm(*args, **kw)
    C = np.zeros((2, 4), np.float32)
    C.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        mma_gemm(h, hb, C, tile=tile)


def test_kernel_cache_and_source():
    k = MK.kernel_for(SIM_TILES[0])
    assert MK.kernel_for(T.MmaTile("f16", 16, 16, 2, 1, 16, 2, "swizzle")) is k
    src = MK.source(SIM_TILES[0])
    assert "mma(" in src and "ldsm_t(" in src and "cp16(" in src
    assert "c0_1_3 = float32(0.0)" in src           # scalar accumulators, unrolled
    with pytest.raises(TypeError):
        MK.kernel_for("mma_f16")
