"""The tensor-core GEMM kernel: ``mma.sync`` fragments, ``ldmatrix``, ``cp.async``.

One generated numba kernel per :class:`~microkernel.gpu.mma_tile.MmaTile`
(closure constants, unsigned 32-bit indices, constant trip counts so the
accumulators stay in registers, as in :mod:`microkernel.gpu.kernel`). Per thread
block (BM x BN of C) and per BK slice of K:

1. **global -> shared**: every thread issues ``a_chunks/threads`` +
   ``b_chunks/threads`` 16-byte ``cp.async`` copies into stage ``slice % stages``
   (src-size < 16 zero-fills the A/B edges: any M, N, K), then
   ``cp.async.commit_group``; ``stages - 1`` slices are in flight while one is
   computed (``cp.async.wait_group stages-2`` + one ``syncthreads`` per slice).
2. **shared -> registers**: per instruction k step, each warp loads its MI A
   fragments with ``ldmatrix.x4`` and its NI B fragments with
   ``ldmatrix.x4.trans`` (f16/bf16) or 32-bit shared loads (tf32), at the lane
   addresses of :mod:`microkernel.gpu.mma_tile` (padding or XOR swizzle).
3. **mma**: MI x NI ``mma.sync`` per k step into the 4*MI*NI fp32 accumulators.
4. **epilogue**: C := alpha*acc + beta*C from the C fragment layout
   (c0, c1 = C[g, 2t:2t+2], c2, c3 = C[g+8, 2t:2t+2]), guarded at the edges.

BLAS semantics as :func:`microkernel.gpu.gemm`: beta == 0 never reads C (NaN in C
does not survive); alpha == 0 or K == 0 gives beta*C without reading A or B;
M == 0 or N == 0 touches nothing. Inputs: f16/bf16 (A, B as 16-bit words) or
float32 for tf32 (rounded in registers with ``cvt.rna.tf32.f32``); output fp32.

Under ``NUMBA_ENABLE_CUDASIM=1`` the very same kernel source runs with the
Python twins of the intrinsics (:func:`microkernel.gpu.mma_intrinsics.sim`).
"""
from __future__ import annotations

import threading

import numpy as np

from . import mma_intrinsics
from .kernel import _import_cuda
from .mma_tile import MmaTile

__all__ = ["MmaKernel", "kernel_for", "build", "source", "signature", "DEFAULT_MMA_TILES",
           "clear_cache"]

#: The default tile per precision: 64x64 warp tiles (128 fp32 accumulators per
#: lane: the port of avx512_8x16), 2x2 warps, XOR swizzle, 48 KB of stages.
DEFAULT_MMA_TILES = {
    "f16": MmaTile("f16", 64, 64, 2, 2, 32, 3, "swizzle"),
    "bf16": MmaTile("bf16", 64, 64, 2, 2, 32, 3, "swizzle"),
    "tf32": MmaTile("tf32", 64, 64, 2, 2, 16, 3, "swizzle"),
}


def signature(tile: MmaTile) -> str:
    """The launch signature: A, B (uint16 words for f16/bf16, float32 for tf32;
    C-contiguous, rows padded to 16 bytes), C float32, K, alpha, beta."""
    et = "float32" if tile.precision == "tf32" else "uint16"
    return (f"void({et}[:, ::1], {et}[:, ::1], float32[:, ::1], uint32, float32, "
            f"float32)")


_TEMPLATE = """
def {name}(A, B, C, K, alpha, beta):
    M = uint32(C.shape[0])
    N = uint32(C.shape[1])
    lda = uint64(A.shape[1])
    ldb = uint64(B.shape[1])
    tid = uint32(cuda.threadIdx.x)
    warp = tid // u(32)
    lane = tid % u(32)
    g = lane // u(4)
    t = lane % u(4)
    wr = (warp // WARPS_N) * WM            # the warp tile's first row in the block
    wc = (warp % WARPS_N) * WN             # ... and first column
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    sm = cuda.shared.array(WORDS, uint32, alignment=ALIGN)
    lrow = (lane % u(8)) + u(8) * ((lane // u(8)) % TWO)   # ldmatrix: row of matrix lane//8
    lhi = lane // SIXTEEN
{zero}
    nk = (K + BK - ONE) // BK
    if alpha == 0:
        nk = ZERO                          # A and B are not read
    for it in range(nk + S1):
        if it >= S1:                       # slice it-(S-1) has landed: wait, then barrier
            wait()
            cuda.syncthreads()
        if it < nk:                        # issue slice `it` into stage it % S (cp.async)
            st = (it % S) * STAGE
            k0 = it * BK
            for i in range(A_PER):
                e = tid + i * NT
{a_guard}
                r = e // A_CPR
                c = e % A_CPR
                gr = row0 + r
                gk = k0 + c * CE
                nb = ZERO
                goff = uint64(0)
                if gr < M and gk < K:      # src-size < 16 zero-fills the edge
                    nb = min((K - gk) * ES, SIXTEEN)
                    goff = (uint64(gr) * lda + uint64(gk)) * uint64(ES)
                cp16(sm, st + r * A_STRIDE + ((c ^ (((r >> A_SH) * A_MUL) & A_MASK)) << u(4)),
                     A, goff, nb)
            for i in range(B_PER):
                e = tid + i * NT
{b_guard}
                r = e // B_CPR
                c = e % B_CPR
                gk = k0 + r
                gn = col0 + c * CE
                nb = ZERO
                goff = uint64(0)
                if gk < K and gn < N:
                    nb = min((N - gn) * ES, SIXTEEN)
                    goff = (uint64(gk) * ldb + uint64(gn)) * uint64(ES)
                cp16(sm, st + B_BASE + r * B_STRIDE
                     + ((c ^ (((r >> B_SH) * B_MUL) & B_MASK)) << u(4)), B, goff, nb)
        commit()
        if it >= S1:                       # compute slice it-(S-1)
            st = ((it - S1) % S) * STAGE
{compute}
{epilogue}
"""


def _compute_src(tile: MmaTile) -> str:
    """The unrolled k steps of one slice: fragments from shared memory, then the
    MI x NI mma (the accumulators are scalars c<mi>_<ni>_<q>)."""
    L = []
    ind = " " * 12
    for kk in range(tile.ki):
        L.append(f"{ind}# k step {kk}: A fragments (ldmatrix.x4)")
        for mi in range(tile.mi):
            L.append(f"{ind}r = wr + u({mi * 16}) + lrow")
            L.append(f"{ind}x = ((r >> A_SH) * A_MUL) & A_MASK")
            L.append(f"{ind}a{mi}_0, a{mi}_1, a{mi}_2, a{mi}_3 = ldsm(sm, st + r * A_STRIDE"
                     f" + (((u({2 * kk}) + lhi) ^ x) << u(4)))")
            if tile.precision == "tf32":
                for q in range(4):
                    L.append(f"{ind}a{mi}_{q} = cvt(a{mi}_{q})")
        if tile.precision == "tf32":
            L.append(f"{ind}# B fragments: b_j = B[8kk + t + 4j, 8ni + g] (32-bit loads)")
            for j in range(2):
                L.append(f"{ind}k = u({kk * 8 + 4 * j}) + t")
                L.append(f"{ind}x = ((k >> B_SH) * B_MUL) & B_MASK")
                for ni in range(tile.ni):
                    L.append(f"{ind}nb = (wc + u({ni * 8}) + g) * u(4)")
                    L.append(f"{ind}b{ni}_{j} = cvt(lds32(sm, st + B_BASE + k * B_STRIDE"
                             f" + (((nb >> u(4)) ^ x) << u(4)) + (nb & u(15))))")
        else:
            L.append(f"{ind}# B fragments (ldmatrix.x4.trans: n8 tiles 2p, 2p+1)")
            L.append(f"{ind}k = u({kk * 16}) + lrow")
            L.append(f"{ind}x = ((k >> B_SH) * B_MUL) & B_MASK")
            for p in range(tile.ni // 2):
                L.append(f"{ind}ch = (wc + u({p * 16}) + u(8) * lhi) * ES // SIXTEEN")
                L.append(f"{ind}b{2 * p}_0, b{2 * p}_1, b{2 * p + 1}_0, b{2 * p + 1}_1 = ldsm_t("
                         f"sm, st + B_BASE + k * B_STRIDE + ((ch ^ x) << u(4)))")
        L.append(f"{ind}# {tile.mi * tile.ni} mma.sync")
        for mi in range(tile.mi):
            for ni in range(tile.ni):
                c = ", ".join(f"c{mi}_{ni}_{q}" for q in range(4))
                L.append(f"{ind}{c} = mma(a{mi}_0, a{mi}_1, a{mi}_2, a{mi}_3, "
                         f"b{ni}_0, b{ni}_1, {c})")
    return "\n".join(L)


def _epilogue_src(tile: MmaTile) -> str:
    """C := alpha*acc + beta*C, fragment by fragment: c_{2h+q} = C[g+8h, 2t+q]."""
    L = ["    # epilogue: fragment (mi, ni) holds c_{2h+q} = C[g + 8h, 2t + q]"]
    for mi in range(tile.mi):
        for h in range(2):
            L.append(f"    rr = row0 + wr + u({mi * 16 + 8 * h}) + g")
            L.append("    if rr < M:")
            for ni in range(tile.ni):
                for q in range(2):
                    v = f"c{mi}_{ni}_{2 * h + q}"
                    L.append(f"        cc = col0 + wc + u({ni * 8 + q}) + TWO * t")
                    L.append("        if cc < N:")
                    L.append("            if beta == 0:        # C is not read")
                    L.append(f"                C[rr, cc] = alpha * {v}")
                    L.append("            else:")
                    L.append(f"                C[rr, cc] = alpha * {v} + beta * C[rr, cc]")
    return "\n".join(L)


def source(tile: MmaTile) -> str:
    """The generated kernel source of ``tile`` (Python, compiled by numba)."""
    zero = "\n".join(f"    c{mi}_{ni}_{q} = float32(0.0)" for mi in range(tile.mi)
                     for ni in range(tile.ni) for q in range(4))
    # a thread whose chunk lies past the slice (threads that do not divide the
    # chunks) copies chunk 0 again: the same bytes to the same place, harmless
    ag = ("                if e >= A_CHUNKS:\n                    e = ZERO"
          if tile.a_chunks % tile.threads else "")
    bg = ("                if e >= B_CHUNKS:\n                    e = ZERO"
          if tile.b_chunks % tile.threads else "")
    return _TEMPLATE.format(name=tile.name, zero=zero, compute=_compute_src(tile),
                            epilogue=_epilogue_src(tile), a_guard=ag, b_guard=bg)


def build(tile: MmaTile, sim: bool):
    """The Python kernel function for ``tile`` (not yet ``cuda.jit``-ed): the
    source of :func:`source`, executed with the tile's constants and the
    intrinsics (GPU) or their Python twins (simulator) as its globals.

    The k steps, fragments and the epilogue are unrolled in the source (the
    accumulators are 4*MI*NI scalar variables): NVVM's unroller did not unroll
    the guarded epilogue of a 64x64 warp tile, which left the accumulator array
    in local memory (512 B stack frame, ld/st.local around every mma)."""
    cuda = _import_cuda()
    I = mma_intrinsics.sim() if sim else mma_intrinsics.gpu()
    u = np.uint32
    al, bl = tile.a_layout, tile.b_layout
    env = {
        "cuda": cuda, "uint32": cuda.uint32, "uint64": cuda.uint64, "float32": cuda.float32,
        "u": u, "min": min,
        "mma": I.mma[tile.precision], "ldsm": I.ldsm_x4, "ldsm_t": I.ldsm_x4_trans,
        "cp16": I.cp_async16, "commit": I.cp_commit, "wait": I.cp_wait(tile.stages - 2),
        "cvt": I.cvt_tf32, "lds32": I.lds32,
        "S": u(tile.stages), "S1": u(tile.stages - 1), "BK": u(tile.bk), "BM": u(tile.bm),
        "BN": u(tile.bn), "WM": u(tile.wm), "WN": u(tile.wn), "NT": u(tile.threads),
        "WARPS_N": u(tile.warps_n), "ES": u(tile.esize), "CE": u(16 // tile.esize),
        "A_STRIDE": u(al.stride), "A_SH": u(al.shift), "A_MUL": u(al.mul), "A_MASK": u(al.mask),
        "B_STRIDE": u(bl.stride), "B_SH": u(bl.shift), "B_MUL": u(bl.mul), "B_MASK": u(bl.mask),
        "STAGE": u(tile.stage_bytes), "B_BASE": u(-(-al.bytes // 128) * 128),
        "A_CPR": u(tile.bk * tile.esize // 16), "B_CPR": u(tile.bn * tile.esize // 16),
        "A_PER": u(tile.a_per), "B_PER": u(tile.b_per),
        "A_CHUNKS": u(tile.a_chunks), "B_CHUNKS": u(tile.b_chunks),
        "WORDS": tile.smem_bytes // 4, "ZERO": u(0), "ONE": u(1), "TWO": u(2),
        "SIXTEEN": u(16), "ALIGN": None if sim else 128,
    }
    src = source(tile)
    exec(compile(src, f"<microkernel.gpu.mma_kernel {tile.name}>", "exec"), env)
    fn = env[tile.name]
    fn.__source__ = src
    return fn


class MmaKernel:
    """One generated tensor-core kernel: its :class:`MmaTile`, numba dispatcher,
    launcher and resources. ``launch`` takes device arrays already in the kernel's
    form (see :func:`signature`); :func:`microkernel.gpu.mma_gemm` is the checked
    front end."""

    def __init__(self, tile: MmaTile, sim: bool):
        cuda = _import_cuda()
        self.tile = tile
        self.simulated = sim
        self.py_func = build(tile, sim)
        self.dispatcher = cuda.jit(self.py_func)

    def __repr__(self) -> str:
        return f"<MmaKernel {self.tile.name}{' (simulator)' if self.simulated else ''}>"

    @property
    def name(self) -> str:
        return self.tile.name

    def launch(self, A, B, C, k: int, alpha: float = 1.0, beta: float = 0.0, stream=0):
        """C (M x N) := alpha * A[:, :k] @ B[:k] + beta * C on device arrays (no checks)."""
        m, n = C.shape
        if m == 0 or n == 0:
            return C
        self.dispatcher[self.tile.grid(m, n), self.tile.threads, stream](
            A, B, C, np.uint32(k), np.float32(alpha), np.float32(beta))
        return C

    __call__ = launch

    def compile(self):
        """Compile for :func:`signature` on the current GPU (no-op in the simulator)."""
        if not self.simulated:
            self.dispatcher.compile(signature(self.tile))
        return self

    def resources(self) -> dict | None:
        """regs, local_bytes (spills), shared_bytes, max_threads from numba's
        dispatcher on the current GPU; None in the simulator."""
        if self.simulated:
            return None
        from numba.cuda.core import sigutils
        self.compile()
        args, _ = sigutils.normalize_signature(signature(self.tile))
        d = self.dispatcher

        def pick(v):
            return int(v[tuple(args)] if isinstance(v, dict) else v)
        return {"regs": pick(d.get_regs_per_thread()),
                "local_bytes": pick(d.get_local_mem_per_thread()),
                "shared_bytes": pick(d.get_shared_mem_per_block()),
                "max_threads": pick(d.get_max_threads_per_block())}

    def ptx(self, cc=(9, 0)) -> str:
        """PTX for compute capability ``cc`` (NVVM and NVRTC, no GPU needed)."""
        cuda = _import_cuda()
        if self.simulated:
            raise RuntimeError("no PTX under the CUDA simulator")
        ptx, _ = cuda.compile_ptx(self.py_func, signature(self.tile), cc=cc)
        return ptx

    def ptxas(self, arch: str = "sm_90") -> dict | None:
        """ptxas -v on :meth:`ptx`: regs, stack frame, spills, smem (offline; None
        without ptxas or NVVM). See :func:`microkernel.gpu.port.ptxas_resources`."""
        from .port import ptxas_resources
        return ptxas_resources(self, arch)


_CACHE: dict = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()


def kernel_for(tile: MmaTile) -> MmaKernel:
    """The cached :class:`MmaKernel` of ``tile`` (per simulator mode)."""
    from .kernel import simulator_active
    if not isinstance(tile, MmaTile):
        raise TypeError(f"tile must be an MmaTile, got {type(tile).__name__}")
    sim = simulator_active()
    with _LOCK:
        k = _CACHE.get((tile, sim))
        if k is None:
            k = _CACHE[(tile, sim)] = MmaKernel(tile, sim)
    return k
