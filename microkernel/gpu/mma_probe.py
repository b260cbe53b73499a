"""One-warp probes: the GPU's fragment placement, register by register.

:func:`placement` runs, on one warp, the same intrinsics the GEMM kernel uses,
and returns what every lane's registers hold next to what the numpy model of
:mod:`microkernel.gpu.fragments` says they must hold:

- ``ldmatrix``: a 16x16 (tf32: 16x8 and 8x8) matrix of *distinct* values is put
  in shared memory (row-major, unpadded), each lane hands ``ldmatrix.x4`` (A) and
  ``ldmatrix.x4.trans`` (B; tf32: two 32-bit loads) the address the GEMM kernel's
  lane rule gives (:func:`microkernel.gpu.mma_tile.a_ldsm_address`), and its
  registers are read back; expected: ``pack(layout, layout.gather(matrix))``;
- ``mma``: per-lane registers built by the model from A = distinct integers and
  B = the identity (so D = A[:, :8] exactly), then from A = the identity and
  B = distinct integers (D = B), and C = distinct integers added on top; every
  product and sum is an exact small integer in fp32, so D must equal the
  model's D bit for bit: the C/D placement, and A's and B's, checked through the
  instruction itself.

Under the CUDA simulator the intrinsics *are* the model (a self-consistency
check of the kernel-side lane arithmetic); on a GPU this is the
bit-for-bit comparison of hardware and model.
"""
from __future__ import annotations

import numpy as np

from . import fragments, mma_intrinsics
from .kernel import _import_cuda

__all__ = ["placement", "distinct_matrix"]

_KERNELS: dict = {}
#: ``numba.cuda``, bound on first use: the kernels below must name it as a module
#: global (the simulator swaps module globals that are ``numba.cuda``).
cuda = None


def distinct_matrix(rows: int, cols: int, offset: int = 1) -> np.ndarray:
    """rows x cols float32 of distinct integers offset..offset+rows*cols-1 (exact in
    f16, bf16 (<= 256) and tf32)."""
    return (np.arange(rows * cols, dtype=np.float32) + offset).reshape(rows, cols)


def _kernels(precision: str, sim: bool):
    key = (precision, sim)
    global cuda
    if key in _KERNELS:
        return _KERNELS[key]
    cuda = _import_cuda()
    I = mma_intrinsics.sim() if sim else mma_intrinsics.gpu()
    mma, ldsm, ldsm_t, lds32, cvt = (I.mma[precision], I.ldsm_x4, I.ldsm_x4_trans,
                                     I.lds32, I.cvt_tf32)
    u = np.uint32
    tf32 = precision == "tf32"
    ROW = u(32)                      # bytes per row of the staged 16-bit / tf32 matrices
    AW, BW = 128, (64 if tf32 else 128)   # 32-bit words of the staged A and B
    uint32 = cuda.uint32

    def mma_k(a, b, c, d):
        ln = cuda.threadIdx.x
        r = mma(uint32(a[ln, 0]), uint32(a[ln, 1]), uint32(a[ln, 2]), uint32(a[ln, 3]),
                uint32(b[ln, 0]), uint32(b[ln, 1]), c[ln, 0], c[ln, 1], c[ln, 2], c[ln, 3])
        d[ln, 0] = r[0]
        d[ln, 1] = r[1]
        d[ln, 2] = r[2]
        d[ln, 3] = r[3]

    def ldsm_k(aw, bw, out_a, out_b):
        sa = cuda.shared.array(AW, uint32)
        sb = cuda.shared.array(BW, uint32)
        ln = uint32(cuda.threadIdx.x)
        for i in range(u(4)):
            sa[ln + u(32) * i] = aw[ln + u(32) * i]
        for i in range(u(BW // 32)):
            sb[ln + u(32) * i] = bw[ln + u(32) * i]
        cuda.syncthreads()
        lrow = (ln % u(8)) + u(8) * ((ln // u(8)) % u(2))
        a = ldsm(sa, lrow * ROW + (ln // u(16)) * u(16))
        for q in range(4):
            out_a[ln, q] = a[q]
        if tf32:                     # b_j = B[t + 4j, g], rows of 8 floats
            g, t = ln // u(4), ln % u(4)
            out_b[ln, 0] = lds32(sb, t * ROW + g * u(4))
            out_b[ln, 1] = lds32(sb, (t + u(4)) * ROW + g * u(4))
            out_b[ln, 2] = cvt(out_b[ln, 0])
            out_b[ln, 3] = cvt(out_b[ln, 1])
        else:
            b = ldsm_t(sb, lrow * ROW + (ln // u(16)) * u(16))
            for q in range(4):
                out_b[ln, q] = b[q]

    ks = (cuda.jit(mma_k), cuda.jit(ldsm_k))
    _KERNELS[key] = ks
    return ks


def _as_words(m: np.ndarray, elem: str) -> np.ndarray:
    """Row-major 32-bit words of a matrix of ``elem`` values (16-bit: two per word)."""
    bits = fragments.to_bits(m, elem)
    if bits.dtype == np.uint16:
        return bits.reshape(-1).view(np.uint32).copy()
    return bits.reshape(-1).astype(np.uint32)


def placement(precision: str) -> dict:
    """Run the probes on one warp (GPU or simulator) and return ``{name: (got,
    expected)}`` uint32/float32 arrays of shape (32, regs). Names:
    ``ldmatrix A``, ``ldmatrix B``, (tf32: ``cvt.rna B``), ``mma A@I``,
    ``mma I@B``."""
    from .kernel import simulator_active
    ins = fragments.INSTRUCTIONS[precision]
    mma_k, ldsm_k = _kernels(precision, simulator_active())
    cuda = _import_cuda()
    el = ins.in_elem
    out = {}
    # -- ldmatrix ---------------------------------------------------------------------
    # distinct bit patterns (finite, positive values of the type)
    if el == "tf32":
        Am = distinct_matrix(ins.m, ins.k)                     # 16x8
        Bm = distinct_matrix(ins.k, 8, 300)
    else:
        Am = fragments.from_bits(np.arange(256, dtype=np.uint16).reshape(16, 16) + 0x3C00, el)
        Bm = fragments.from_bits(np.arange(256, dtype=np.uint16).reshape(16, 16) + 0x3400, el)
    aw, bw = _as_words(Am, el), _as_words(Bm, el)
    if el == "tf32":                 # B words carry low mantissa bits: cvt must clear them
        bw = (bw | np.uint32(0x0FFF)).astype(np.uint32)
    oa = cuda.to_device(np.zeros((32, 4), np.uint32))
    ob = cuda.to_device(np.zeros((32, 4), np.uint32))
    ldsm_k[1, 32](cuda.to_device(aw), cuda.to_device(bw), oa, ob)
    got_a, got_b = oa.copy_to_host(), ob.copy_to_host()
    if el == "tf32":                 # ldmatrix of an 8x4-float view: the m16n8k8 A fragment
        out["ldmatrix A"] = (got_a, fragments.pack(ins.a, ins.a.gather(Am)))
        raw = bw.reshape(8, 8)
        out["ld.shared B"] = (got_b[:, :2], ins.b.gather(raw)[..., 0].astype(np.uint32))
        out["cvt.rna B"] = (got_b[:, 2:], fragments.pack(
            ins.b, ins.b.gather(fragments.from_bits(raw, "f32").astype(np.float32))))
    else:
        out["ldmatrix A"] = (got_a, fragments.pack(ins.a, ins.a.gather(Am)))
        exp_b = np.concatenate([fragments.pack(ins.b, ins.b.gather(Bm[:, :8])),
                                fragments.pack(ins.b, ins.b.gather(Bm[:, 8:]))], axis=1)
        out["ldmatrix x4.trans B"] = (got_b, exp_b)
    # -- mma: identities make every result an exact small integer ------------------------
    Cm = distinct_matrix(ins.m, ins.n, 1000)
    for label, A_, B_ in (("mma A@I", distinct_matrix(ins.m, ins.k),
                           np.eye(ins.k, ins.n, dtype=np.float32)),
                          ("mma I@B", np.eye(ins.m, ins.k, dtype=np.float32),
                           distinct_matrix(ins.k, ins.n, 2))):
        a_regs = fragments.pack(ins.a, ins.a.gather(A_))
        b_regs = fragments.pack(ins.b, ins.b.gather(B_))
        c = ins.c.gather(Cm)[..., 0].astype(np.float32)
        d = cuda.to_device(np.zeros((32, 4), np.float32))
        mma_k[1, 32](cuda.to_device(a_regs), cuda.to_device(b_regs), cuda.to_device(c), d)
        expected = ins.c.gather((A_.astype(np.float64) @ B_ + Cm).astype(np.float32))[..., 0]
        model = fragments.mma_sync(ins, a_regs, b_regs, c)
        if not np.array_equal(model, expected):          # the model itself must agree
            raise AssertionError(f"{label}: the numpy model disagrees with A@B+C")
        out[label] = (d.copy_to_host(), expected)
    return out
