"""The numba CUDA SGEMM kernel factory: the CPU micro-kernel's loop, one per thread.

The CPU micro-kernel (:func:`microkernel.tile.reference_ukernel`, and the generated
C kernel it mirrors) keeps an MR x NR tile of C in registers and, per k step, loads
one NR-wide row of B and broadcasts MR values of A into MR x NR FMAs. The GPU
kernel built here runs *the same loop in every thread*, one level down a blocking
hierarchy that replaces the CPU's packing and caches with shared memory::

    CPU (tile.reference_ukernel)              GPU (make_sgemm's kernel, per thread)
    ----------------------------              -------------------------------------
    acc = zeros(MR, NR)                       acc = cuda.local.array((TM, TN))  # registers
    for k in range(kc):                       for k in range(BK):    # per staged k block
        b_row = b_panel[k]      # NR lanes        regA[i] = As[k, row(i)]  for i < TM
        for i in range(MR):                       regB[j] = Bs[k, col(j)]  for j < TN
            acc[i] += a_panel[k, i] * b_row       acc[i, j] = fma(regA[i], regB[j], acc[i, j])
    C = alpha*acc (+ beta*C)                  C = alpha*acc (+ beta*C), edges guarded

``a_panel``/``b_panel`` (the packed micro-panels) become ``As``/``Bs``: the block's
BM x BK slice of A (stored transposed, k-major, like a packed A panel, so that the
TM values of regA are contiguous and load as 16-byte vectors) and BK x BN slice of
B, staged in shared memory by all the block's threads. The block tile BM x BN is
covered by (BM/TM) x (BN/TN) threads. This is the "2D block tiling" of siboehm's
SGEMM worklog (kernels 5 and 6: "How to Optimize a CUDA Matmul Kernel for
cuBLAS-like Performance", 2022), with the transposed, vectorised shared-memory
loads of kernel 6, double buffering (shared memory and registers) and 32-bit
unsigned index arithmetic. Measured on an H200 at 4096^3 fp32 (bench/gpu_h200.py,
bench/results/h200_gpu.md): about 65% of cuBLAS, against 16% for the plain
version (signed int64 indices, contiguous thread tile, one stage).

Why the kernel is written the way it is (numba-cuda specifics, seen in its PTX and resource reports):

* TM, TN, BM, BN, BK, the thread count and the layout are closure constants of the
  generated kernel, and every loop over a register array has a constant trip
  count, so NVVM unrolls it, every ``acc[i, j]``/``regA[i]``/``regB[j]`` index
  folds to a constant, and SROA keeps the arrays in registers (else: local memory).
* Index arithmetic is unsigned (``uint32`` values, ``range`` over ``np.uint32``
  constants). numba types ``threadIdx`` as int32 and widens every integer op to
  int64; a *signed* index also gets Python's negative-index wrap-around code
  (``idx < 0 ? idx + n : idx``) on every array access, which NVVM could not remove
  here: the plain signed version spent ~8 integer instructions per shared load
  inside the inner loop (PTX: shr/and/add/selp per index). Unsigned indices have no
  wrap-around, so the inner loop is 4 ``ld.shared.v4.f32`` + 64 ``fma.rn.f32`` per k
  for an 8x8 tile.
* Shared arrays get ``alignment=16`` so NVVM's load/store vectoriser emits 16-byte
  shared loads; the thread's TM rows (TN columns) are taken in groups of 4 spread
  over the block (``layout="vec4"``): thread t reads float4 number t of a row, so a
  quarter-warp reads 128 contiguous bytes (no bank conflicts), and C stores
  coalesce. ``layout="contiguous"`` gives each thread one contiguous TM x TN block
  of C, the literal picture of the CPU tile (2-way bank conflicts on B).
* ``stages=2``: the next BM x BK / BK x BN tiles are loaded from global memory
  into registers while the current ones are multiplied, then stored into the other
  shared buffer; one ``syncthreads`` per k block. ``stages=1`` is the textbook
  load / sync / compute / sync loop.
* ``pipeline=True``: the inner loop runs two k per trip with two operand sets, so
  that the next k's regA/regB loads are in flight while this k's FMAs issue
  (ptxas does not software-pipeline numba's rolled k loop by itself: the SASS had
  4 LDS.128 followed at once by 64 dependent FFMAs). ``min_blocks`` caps the
  registers (``max_registers``) so that the extra operand registers do not cost a
  resident block (8x8: 140 -> 128 registers, 1 -> 2 blocks per SM).

Edges: the staging loads zero-fill outside A and B (so the inner loop needs no
guard), and the C stores are guarded: any M, N, K, no out-of-bounds access.
BLAS semantics (reference xGEMM): C := alpha*A@B + beta*C; beta == 0 never reads C
(NaN/Inf in C do not survive); alpha == 0 or K == 0 gives beta*C without reading A
or B; M == 0 or N == 0 touches nothing.

numba and numba-cuda (the ``[gpu]`` extra, plus cuda-bindings) are imported
lazily; importing this module needs neither. Under the simulator
(``NUMBA_ENABLE_CUDASIM=1``) the same source runs in Python (no ``alignment``
there, which the simulator rejects).
"""
from __future__ import annotations

import threading

import numpy as np

from .tiles import A_PAD, DEFAULT_TILE, LEGACY_TILE, GpuTile, max_registers

__all__ = ["GpuTile", "SgemmKernel", "make_sgemm", "from_spec", "gemm", "DEFAULT_TILE",
           "LEGACY_TILE", "SIGNATURE", "simulator_active", "clear_cache", "kernel_for",
           "max_registers"]

#: The original kernel's launch signature (C-contiguous float32 matrices, float32
#: scalars); the warp-tiled kernel's is :data:`microkernel.gpu.simt.SIGNATURE`.
SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32, float32)"

#: ``numba.cuda``, bound on first use by :func:`_import_cuda`. The kernel source
#: refers to it as a *module global* (not a closure variable) because the
#: simulator runs kernels by swapping module globals that name ``numba.cuda``
#: for its fake module.
cuda = None


def _import_cuda():
    """Import numba.cuda (lazily), with the numpy >= 2.5 shim numba-cuda 0.30 needs.

    numba-cuda 0.30.4 registers ``overload(np.row_stack)`` when its array module
    loads (at the first compile); numpy 2.5 removed ``np.row_stack`` (an alias of
    ``np.vstack``), so the first compile dies with AttributeError. We restore the
    alias if it is missing (it is exactly ``np.vstack``).

    Raises ImportError (with the install hint) when numba-cuda is missing.
    """
    global cuda
    if cuda is not None:
        return cuda
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    try:
        from numba import cuda as _cuda
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "microkernel.gpu needs numba-cuda: pip install 'microkernel[gpu]' "
            "(numba, numba-cuda, cuda-bindings)") from e
    cuda = _cuda
    return cuda


def simulator_active() -> bool:
    """True when numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1`` at import)."""
    cuda = _import_cuda()
    return bool(cuda.config.ENABLE_CUDASIM)


def _build(tile: GpuTile, sim: bool):
    """Generate the numba kernel for ``tile`` (see the module docstring)."""
    _import_cuda()
    float32 = cuda.float32
    # index type: unsigned 32-bit values (the default), or numba's default signed
    # 64-bit integers (index="i64", kept as the ablation baseline: every array
    # access then carries the negative-index wrap-around code)
    uint32 = cuda.uint32 if tile.index == "u32" else cuda.int64

    u = np.uint32 if tile.index == "u32" else np.int64
    TM, TN, BM, BN, BK = tile.tm, tile.tn, tile.bm, tile.bn, tile.bk
    BMP = BM + A_PAD
    STAGES = tile.stages
    PIPE = tile.pipeline
    A_PER, B_PER = tile.a_loads, tile.b_loads
    # unsigned closure constants: loops over them yield unsigned indices
    uTM, uTN, uBM, uBN, uBK = u(TM), u(TN), u(BM), u(BN), u(BK)
    uNT, uTX = u(tile.threads), u(tile.tx)
    uA_PER, uB_PER = u(A_PER), u(B_PER)
    uGM, uGN = u(tile.gm), u(tile.gn)
    uSM, uSN = u(tile.ty * tile.gm), u(tile.tx * tile.gn)   # stride between groups
    ZERO, ONE, TWO = u(0), u(1), u(2)
    ALIGN = None if sim else 16     # the simulator rejects alignment=

    # Staging: element e of the BM x BK A tile is row e//BK, column e%BK (consecutive
    # threads read consecutive k of one row of A); of the BK x BN B tile, row e//BN,
    # column e%BN (coalesced). Outside A or B the tile is zero-filled, so the inner
    # loop needs no edge test. Thread tid loads elements e = tid + p*threads.
    def a_elem(A, M, K, row0, k0, e):
        """Element e of the A tile at k block k0 (0 outside A)."""
        m = e // uBK
        kk = k0 + e % uBK
        v = float32(0.0)
        if row0 + m < M and kk < K:
            v = A[row0 + m, kk]
        return v

    def b_elem(B, N, K, col0, k0, e):
        """Element e of the B tile at k block k0 (0 outside B)."""
        kk = k0 + e // uBN
        n = e % uBN
        v = float32(0.0)
        if col0 + n < N and kk < K:
            v = B[kk, col0 + n]
        return v

    def stage(As, Bs, buf, A, B, M, N, K, row0, col0, tid, k0):
        """Store this thread's share of the A (transposed) and B tiles at k block
        k0 into shared buffer ``buf``."""
        for p in range(uA_PER):
            e = tid + p * uNT
            As[buf, e % uBK, e // uBK] = a_elem(A, M, K, row0, k0, e)
        for p in range(uB_PER):
            e = tid + p * uNT
            Bs[buf, e // uBN, e % uBN] = b_elem(B, N, K, col0, k0, e)

    a_elem = cuda.jit(device=True)(a_elem)
    b_elem = cuda.jit(device=True)(b_elem)
    stage = cuda.jit(device=True)(stage)

    def sgemm(A, B, C, alpha, beta):
        M = uint32(C.shape[0])
        N = uint32(C.shape[1])
        K = uint32(A.shape[1])
        tid = uint32(cuda.threadIdx.x)
        row0 = uint32(cuda.blockIdx.y) * uBM          # block's first row of C
        col0 = uint32(cuda.blockIdx.x) * uBN          # block's first column of C
        am = (tid // uTX) * uGM                       # thread's first row in As
        bn = (tid % uTX) * uGN                        # thread's first column in Bs
        # Shared arrays on separate lines: the simulator aliases arrays declared
        # on one source line.
        As = cuda.shared.array((STAGES, BK, BMP), float32, alignment=ALIGN)  # A^T
        Bs = cuda.shared.array((STAGES, BK, BN), float32, alignment=ALIGN)
        acc = cuda.local.array((TM, TN), float32)     # the register tile of C
        regA = cuda.local.array(TM, float32)
        regB = cuda.local.array(TN, float32)
        regA2 = cuda.local.array(TM, float32)         # pipeline: operands of k+1
        regB2 = cuda.local.array(TN, float32)
        nextA = cuda.local.array(A_PER, float32)      # stages == 2: next k block
        nextB = cuda.local.array(B_PER, float32)
        for i in range(uTM):
            for j in range(uTN):
                acc[i, j] = float32(0.0)               # local arrays start undefined
        nk = (K + uBK - ONE) // uBK                   # k blocks
        if alpha == 0:
            nk = ZERO                                 # alpha == 0: A, B are not read

        if STAGES == 2 and nk > ZERO:
            stage(As, Bs, ZERO, A, B, M, N, K, row0, col0, tid, ZERO)
        cuda.syncthreads()

        for kt in range(nk):
            if STAGES == 2:
                cur = kt & ONE
                k0 = (kt + ONE) * uBK                 # the k block loaded ahead
                ahead = kt + ONE < nk
                if ahead:                             # into registers, for now
                    for p in range(uA_PER):
                        nextA[p] = a_elem(A, M, K, row0, k0, tid + p * uNT)
                    for p in range(uB_PER):
                        nextB[p] = b_elem(B, N, K, col0, k0, tid + p * uNT)
            else:
                cur = ZERO
                stage(As, Bs, ZERO, A, B, M, N, K, row0, col0, tid, kt * uBK)
                cuda.syncthreads()

            # ---- the micro-kernel: tile.reference_ukernel's loop, per thread ----
            if not PIPE:
                for k in range(uBK):
                    for i in range(uTM):              # TM values of A's column k
                        regA[i] = As[cur, k, (i // uGM) * uSM + am + (i % uGM)]
                    for j in range(uTN):              # TN values of B's row k
                        regB[j] = Bs[cur, k, (j // uGN) * uSN + bn + (j % uGN)]
                    for i in range(uTM):              # TM x TN FMAs
                        for j in range(uTN):
                            acc[i, j] = cuda.fma(regA[i], regB[j], acc[i, j])
            else:
                # the same loop, two k per trip: the operands of k+1 (regA2, regB2)
                # load while the FMAs of k run, and those of k+2 while k+1's run
                for i in range(uTM):
                    regA[i] = As[cur, ZERO, (i // uGM) * uSM + am + (i % uGM)]
                for j in range(uTN):
                    regB[j] = Bs[cur, ZERO, (j // uGN) * uSN + bn + (j % uGN)]
                for k in range(ZERO, uBK, TWO):
                    for i in range(uTM):
                        regA2[i] = As[cur, k + ONE, (i // uGM) * uSM + am + (i % uGM)]
                    for j in range(uTN):
                        regB2[j] = Bs[cur, k + ONE, (j // uGN) * uSN + bn + (j % uGN)]
                    for i in range(uTM):
                        for j in range(uTN):
                            acc[i, j] = cuda.fma(regA[i], regB[j], acc[i, j])
                    # k+2 wraps to row 0 on the last trip (a harmless extra load):
                    # no branch, so the loads can issue ahead of the FMAs below
                    for i in range(uTM):
                        regA[i] = As[cur, (k + TWO) % uBK, (i // uGM) * uSM + am + (i % uGM)]
                    for j in range(uTN):
                        regB[j] = Bs[cur, (k + TWO) % uBK, (j // uGN) * uSN + bn + (j % uGN)]
                    for i in range(uTM):
                        for j in range(uTN):
                            acc[i, j] = cuda.fma(regA2[i], regB2[j], acc[i, j])

            if STAGES == 2:
                if ahead:                              # fill the other buffer
                    nxt = cur ^ ONE
                    for p in range(uA_PER):
                        e = tid + p * uNT
                        As[nxt, e % uBK, e // uBK] = nextA[p]
                    for p in range(uB_PER):
                        e = tid + p * uNT
                        Bs[nxt, e // uBN, e % uBN] = nextB[p]
            cuda.syncthreads()

        # ---- C := alpha*acc + beta*C, guarded at the edges ----
        for i in range(uTM):
            r = row0 + (i // uGM) * uSM + am + (i % uGM)
            if r < M:
                for j in range(uTN):
                    c = col0 + (j // uGN) * uSN + bn + (j % uGN)
                    if c < N:
                        if beta == 0:                  # C is not read
                            C[r, c] = alpha * acc[i, j]
                        else:
                            C[r, c] = alpha * acc[i, j] + beta * C[r, c]

    sgemm.__name__ = sgemm.__qualname__ = "sgemm_" + tile.name
    cap = max_registers(tile)
    if sim or cap is None:
        # (the simulator rejects max_registers and launch_bounds: TypeError.)
        return cuda.jit(sgemm)
    # Cap the registers so that min_blocks blocks fit (for 512 threads, 128: else
    # the launch fails). launch_bounds=threads would also cap them, but ptxas then
    # chose 114 registers for the 8x8 tile and a slower schedule (H200: 32.0 ->
    # 28.8 TFLOP/s) than with -maxrregcount 128.
    return cuda.jit(sgemm, max_registers=cap)


class SgemmKernel:
    """One generated SGEMM kernel: its :class:`GpuTile`, the numba dispatcher(s), a
    launcher and its resource report.

    The original kernel (no warp tile) has one dispatcher, signature
    :data:`SIGNATURE`. The warp-tiled kernel (:mod:`microkernel.gpu.simt`) has two,
    of signature :data:`microkernel.gpu.simt.SIGNATURE`: ``"vec"`` (float4 global
    accesses: K and N multiples of 4, 16-byte aligned A, B, C) and ``"scalar"``
    (any shape and alignment); :meth:`launch` picks the one the operands allow.

    ``kernel(A, B, C, alpha, beta)`` launches on device arrays (numba device
    arrays or any ``__cuda_array_interface__`` object, float32, 2-D, C-contiguous)
    with no argument checks; :func:`gemm` is the checked front end.
    """

    def __init__(self, tile: GpuTile, dispatcher, sim: bool, variants: dict | None = None):
        self.tile = tile
        self.dispatcher = dispatcher
        self.simulated = sim
        #: {"vec": dispatcher, "scalar": dispatcher} for the warp-tiled kernel
        self.variants = variants or {"vec": dispatcher}

    def __repr__(self) -> str:
        return f"<SgemmKernel {self.tile.name}{' (simulator)' if self.simulated else ''}>"

    @property
    def name(self) -> str:
        return self.tile.name

    @property
    def signature(self) -> str:
        if self.tile.warp_tiled:
            from .simt import SIGNATURE as S
            return S
        return SIGNATURE

    def variant_for(self, A, B, C) -> str:
        """``"vec"`` when the operands allow float4 accesses (warp-tiled kernel: K and
        N multiples of 4, every data pointer 16-byte aligned), else ``"scalar"``;
        always ``"vec"`` for the original kernel (it has one variant)."""
        if not self.tile.warp_tiled:
            return "vec"
        from .front import vec_ok
        return "vec" if vec_ok(A, B, C) else "scalar"

    def launch(self, A, B, C, alpha: float = 1.0, beta: float = 0.0, stream=0, *,
               W=None, split: int = 1, kslice: int | None = None, variant: str | None = None):
        """Launch on device arrays A (M, K), B (K, N), C (M, N); no checks.

        Warp-tiled kernel only: ``split`` > 1 runs split-K into the workspace ``W``
        ((split*M) x N, device) with ``kslice`` k per split (a multiple of bk) and
        leaves C untouched: reduce W into C with :func:`microkernel.gpu.launch.reduce`
        (:func:`gemm` does both). ``variant`` forces "vec" or "scalar"."""
        m, n = C.shape
        if m == 0 or n == 0:
            return C
        gx, gy = self.tile.grid(m, n)
        if not self.tile.warp_tiled:
            if split != 1:
                raise ValueError(f"{self.tile.name} (no warp tile) has no split-K")
            self.dispatcher[(gx, gy), self.tile.threads, stream](
                A, B, C, np.float32(alpha), np.float32(beta))
            return C
        k = A.shape[1]
        bk = self.tile.bk
        if kslice is None:
            kslice = max(bk, -(-k // (split * bk)) * bk)
        disp = self.variants[variant or self.variant_for(A, B, C)]
        disp[(gx, gy, split), self.tile.threads, stream](
            A, B, C, C if W is None else W, np.float32(alpha), np.float32(beta),
            np.uint32(kslice))
        return C

    __call__ = launch

    def _dispatchers(self, variant):
        if variant == "both":
            return list(self.variants.values())
        return [self.variants[variant or "vec"]]

    def compile(self, variant: str | None = None):
        """Compile for :attr:`signature` on the current GPU (no-op in the simulator):
        ``variant`` "vec" (default), "scalar" or "both" (warp-tiled kernel)."""
        if not self.simulated:
            for d in self._dispatchers(variant):
                d.compile(self.signature)
        return self

    def resources(self, variant: str | None = None) -> dict | None:
        """Compiled resources for :attr:`signature` on the current GPU, from numba's
        dispatcher: ``regs`` (per thread), ``local_bytes`` (per thread: stack frame
        and spills, 0 when the tile stays in registers), ``shared_bytes`` (static,
        per block), ``max_threads`` (per block). None in the simulator, which has
        none of these. Compiles first if needed."""
        if self.simulated:
            return None
        from numba.cuda.core import sigutils
        self.compile(variant)
        args, _ = sigutils.normalize_signature(self.signature)
        d = self._dispatchers(variant)[0]

        def pick(v):
            return int(v[tuple(args)] if isinstance(v, dict) else v)
        return {
            "regs": pick(d.get_regs_per_thread()),
            "local_bytes": pick(d.get_local_mem_per_thread()),
            "shared_bytes": pick(d.get_shared_mem_per_block()),
            "max_threads": pick(d.get_max_threads_per_block()),
        }

    def source(self, variant: str = "vec") -> str | None:
        """The generated Python source (warp-tiled kernel), else None."""
        if not self.tile.warp_tiled:
            return None
        from .simt import kernel_source
        return kernel_source(self.tile, vec=variant == "vec")

    def ptx(self, cc=(9, 0), variant: str | None = None) -> str:
        """PTX of the kernel for compute capability ``cc`` (needs NVVM, not a GPU)."""
        cuda = _import_cuda()
        d = self._dispatchers(variant)[0]
        with _offline_device(cc):
            ptx, _ = cuda.compile_ptx(d.py_func, self.signature, cc=cc)
        return ptx


class _offline_device:
    """Lets numba compile device functions without a GPU: numba-cuda's
    ``Dispatcher.compile_device`` asks the current device for its compute
    capability (the original kernel's staging device functions need it). With no
    driver, answer ``cc`` for the duration of ``compile_ptx``; with a GPU, do
    nothing."""

    def __init__(self, cc):
        self.cc = tuple(cc)
        self.saved = None

    def __enter__(self):
        from numba.cuda import dispatcher as nd
        try:
            nd.get_current_device()
            return self
        except Exception:  # noqa: BLE001 - no driver / no device
            cc = self.cc

            class _Dev:
                compute_capability = cc
            self.saved = nd.get_current_device
            nd.get_current_device = lambda: _Dev()
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            from numba.cuda import dispatcher as nd
            nd.get_current_device = self.saved
        return False


_CACHE: dict = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget all compiled kernels (the numba dispatchers) and launch plans."""
    with _LOCK:
        _CACHE.clear()
    from . import launch
    launch.clear_plans()


def make_sgemm(tm: int = 8, tn: int = 8, bm: int = 128, bn: int = 128, bk: int = 8,
               threads: int | None = None, *, layout: str = "vec4",
               stages: int = 2, index: str = "u32", pipeline: bool = False,
               min_blocks: int = 1, wm: int = 0, wn: int = 0) -> SgemmKernel:
    """Build (or fetch from the cache) the SGEMM kernel with a tm x tn thread tile,
    bm x bn block tile, bk-deep shared-memory staging, ``threads`` per block
    (default and only valid value: ``(bm//tm) * (bn//tn)``) and, when ``wm``/``wn``
    are given, a wm x wn warp tile (the warp-tiled kernel of
    :mod:`microkernel.gpu.simt`). ``layout``, ``stages``, ``index``, ``pipeline``
    and ``min_blocks`` are the levers described in :class:`GpuTile`.

    Kernels are cached by their :class:`GpuTile` (and simulator mode); numba
    compiles each on its first launch (or :meth:`SgemmKernel.compile`).

    Raises ValueError for an invalid tile (see :class:`GpuTile`) and ImportError
    when numba-cuda is not installed.
    """
    tile = GpuTile(tm, tn, bm, bn, bk, threads or 0, layout, stages, index, pipeline,
                   min_blocks, wm, wn)
    return kernel_for(tile)


def kernel_for(tile: GpuTile) -> SgemmKernel:
    """The cached :class:`SgemmKernel` for ``tile``."""
    sim = simulator_active()
    key = (tile, sim)
    with _LOCK:
        k = _CACHE.get(key)
        if k is None:
            if tile.warp_tiled:
                from . import simt
                cap = max_registers(tile)
                variants = {v: simt.build(tile, v == "vec", sim, cuda, cap)
                            for v in ("vec", "scalar")}
                k = SgemmKernel(tile, variants["vec"], sim, variants)
            else:
                k = SgemmKernel(tile, _build(tile, sim), sim)
            _CACHE[key] = k
    return k


def from_spec(spec, *, vector_bits: int | None = None) -> SgemmKernel:
    """The kernel the port's resource model picks for a CPU tile spec
    (:class:`microkernel.tile.TileSpec` or its name, e.g. ``"avx512_8x16"``);
    see :func:`microkernel.gpu.port.plan`."""
    from .port import plan
    return kernel_for(plan(spec, vector_bits=vector_bits).tile)


def _resolve_tile(tile) -> SgemmKernel:
    if tile is None:
        return kernel_for(DEFAULT_TILE)
    if isinstance(tile, SgemmKernel):
        return tile
    if isinstance(tile, GpuTile):
        return kernel_for(tile)
    if isinstance(tile, (tuple, list)):
        return make_sgemm(*tile)
    return from_spec(tile)      # TileSpec or its name


from .front import gemm  # noqa: E402  (the checked front end; imports this module)
