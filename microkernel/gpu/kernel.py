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

import dataclasses
import numbers
import threading

import numpy as np

__all__ = ["GpuTile", "SgemmKernel", "make_sgemm", "from_spec", "gemm", "DEFAULT_TILE",
           "SIGNATURE", "simulator_active", "clear_cache", "kernel_for", "max_registers"]

#: The canonical launch signature (C-contiguous float32 matrices, float32 scalars).
SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32, float32)"

#: Padding (floats) added to each k-row of the transposed A tile in shared memory:
#: breaks the BK-way bank conflict of the transposing store and keeps 16-byte rows.
A_PAD = 4

#: ``numba.cuda``, bound on first use by :func:`_import_cuda`. The kernel source
#: refers to it as a *module global* (not a closure variable) because the
#: simulator runs kernels by swapping module globals that name ``numba.cuda``
#: for its fake module.
cuda = None

_LAYOUTS = ("vec4", "contiguous")


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


def _vec_group(t: int, layout: str) -> int:
    if layout == "contiguous":
        return t
    for g in (4, 2):
        if t % g == 0:
            return g
    return 1


@dataclasses.dataclass(frozen=True)
class GpuTile:
    """Tile parameters of one generated SGEMM kernel (all compile-time constants).

    Parameters
    ----------
    tm, tn : int
        Thread tile: rows x columns of C one thread accumulates in registers (the
        CPU tile's MR x NR).
    bm, bn : int
        Block tile of C (rows x columns); ``bm % tm == bn % tn == 0``.
    bk : int
        Depth (k) of the A and B slices staged in shared memory per step.
    threads : int, optional
        Threads per block; must equal ``(bm // tm) * (bn // tn)`` (derived if 0).
    layout : {"vec4", "contiguous"}
        Which rows/columns of the block tile a thread owns: groups of 4 (2, 1 when
        tm/tn is not a multiple of 4) strided over the block (16-byte,
        conflict-free shared loads), or one contiguous tm x tn block.
    stages : {1, 2}
        Shared-memory buffers (2: global loads of the next k block overlap the
        FMAs of this one).
    index : {"u32", "i64"}
        Index arithmetic: unsigned 32-bit values (default), or numba's default
        signed int64 (the ablation baseline, with negative-index wrap-around code
        on every access).
    pipeline : bool
        Register double buffering: the inner loop runs two k per trip and loads
        the next k's regA/regB while the current FMAs run (bk must be even;
        TM + TN more registers).
    min_blocks : int
        Blocks per SM the registers must allow (1..32): the kernel is built with
        ``max_registers = 65536 / (threads * min_blocks)`` (multiple of 8) when
        that is below 255 (like ``__launch_bounds__(threads, min_blocks)``).

    Raises
    ------
    ValueError
        A parameter that is not a positive integer, a block tile that the thread
        tile does not divide, a thread count that does not match or exceeds 1024,
        staging loads that do not divide evenly over the threads, or more than
        48 KB of (static) shared memory.
    """
    tm: int
    tn: int
    bm: int
    bn: int
    bk: int
    threads: int = 0
    layout: str = "vec4"
    stages: int = 2
    index: str = "u32"
    pipeline: bool = False
    min_blocks: int = 1

    def __post_init__(self):
        for f in ("tm", "tn", "bm", "bn", "bk"):
            v = getattr(self, f)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
                raise ValueError(f"GpuTile.{f} must be a positive integer, got {v!r}")
        if self.bm % self.tm or self.bn % self.tn:
            raise ValueError(f"block tile {self.bm}x{self.bn} is not a multiple of the "
                             f"thread tile {self.tm}x{self.tn}")
        nt = (self.bm // self.tm) * (self.bn // self.tn)
        if not self.threads:
            object.__setattr__(self, "threads", nt)
        elif self.threads != nt:
            raise ValueError(f"threads={self.threads} but a {self.bm}x{self.bn} block of "
                             f"{self.tm}x{self.tn} thread tiles has {nt} threads")
        if nt > 1024:
            raise ValueError(f"{nt} threads per block > 1024")
        if self.layout not in _LAYOUTS:
            raise ValueError(f"layout must be one of {_LAYOUTS}, got {self.layout!r}")
        if not isinstance(self.min_blocks, numbers.Integral) or not 1 <= self.min_blocks <= 32:
            raise ValueError(f"min_blocks must be an integer in 1..32, got {self.min_blocks!r}")
        if (65536 // (nt * self.min_blocks)) // 8 * 8 < 32:
            raise ValueError(f"{self.min_blocks} blocks of {nt} threads leave fewer than "
                             f"32 registers per thread")
        if self.pipeline not in (True, False):
            raise ValueError(f"pipeline must be a bool, got {self.pipeline!r}")
        if self.pipeline and self.bk % 2:
            raise ValueError(f"pipeline=True needs an even bk, got {self.bk}")
        if self.index not in ("u32", "i64"):
            raise ValueError(f"index must be 'u32' or 'i64', got {self.index!r}")
        if self.stages not in (1, 2):
            raise ValueError(f"stages must be 1 or 2, got {self.stages!r}")
        if (self.bm * self.bk) % nt or (self.bk * self.bn) % nt:
            raise ValueError(
                f"the {self.bm}x{self.bk} A tile and {self.bk}x{self.bn} B tile must split "
                f"evenly over {nt} threads (choose bk so that bm*bk and bk*bn are "
                f"multiples of {nt})")
        from .occupancy import STATIC_SHARED_LIMIT
        if self.smem_bytes > STATIC_SHARED_LIMIT:
            raise ValueError(f"{self.name} needs {self.smem_bytes} bytes of shared memory; "
                             f"static shared memory is limited to {STATIC_SHARED_LIMIT}")

    # -- derived --------------------------------------------------------------
    @property
    def ty(self) -> int:
        """Thread rows in the block (bm // tm)."""
        return self.bm // self.tm

    @property
    def tx(self) -> int:
        """Thread columns in the block (bn // tn)."""
        return self.bn // self.tn

    @property
    def gm(self) -> int:
        """Rows per contiguous group in the thread's tile (4, 2, 1, or tm)."""
        return _vec_group(self.tm, self.layout)

    @property
    def gn(self) -> int:
        """Columns per contiguous group in the thread's tile (4, 2, 1, or tn)."""
        return _vec_group(self.tn, self.layout)

    @property
    def a_loads(self) -> int:
        """A elements each thread stages per k block (bm*bk / threads)."""
        return self.bm * self.bk // self.threads

    @property
    def b_loads(self) -> int:
        """B elements each thread stages per k block (bk*bn / threads)."""
        return self.bk * self.bn // self.threads

    @property
    def smem_bytes(self) -> int:
        """Static shared memory per block, bytes: stages*(bk*(bm+4) + bk*bn)*4."""
        return self.stages * (self.bk * (self.bm + A_PAD) + self.bk * self.bn) * 4

    @property
    def name(self) -> str:
        """``gpu_<tm>x<tn>_b<bm>x<bn>x<bk>`` (+ ``_contig``, ``_s1`` if not default)."""
        s = f"gpu_{self.tm}x{self.tn}_b{self.bm}x{self.bn}x{self.bk}"
        if self.layout != "vec4":
            s += "_contig"
        if self.stages != 2:
            s += f"_s{self.stages}"
        if self.index != "u32":
            s += f"_{self.index}"
        if self.pipeline:
            s += "_p2"
        if self.min_blocks > 1:
            s += f"_mb{self.min_blocks}"
        return s

    def grid(self, m: int, n: int) -> tuple[int, int]:
        """Launch grid (blocks along N, blocks along M) for an m x n C."""
        return (-(-n // self.bn), -(-m // self.bm))

    def row_of(self, tr: int, i: int) -> int:
        """Block-local row of C held in acc[i, :] by thread row ``tr``."""
        return (i // self.gm) * (self.ty * self.gm) + tr * self.gm + i % self.gm

    def col_of(self, tc: int, j: int) -> int:
        """Block-local column of C held in acc[:, j] by thread column ``tc``."""
        return (j // self.gn) * (self.tx * self.gn) + tc * self.gn + j % self.gn

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.update(name=self.name, smem_bytes=self.smem_bytes, a_loads=self.a_loads,
                 b_loads=self.b_loads, gm=self.gm, gn=self.gn)
        return d

    def __str__(self) -> str:
        return self.name


#: The default kernel of :func:`gemm`: 8x8 per thread, 128x128 block, 256 threads,
#: register-pipelined, registers capped at 128 for 2 blocks per SM (H200, 4096^3
#: fp32: 33.5 TFLOP/s, 65% of cuBLAS; bench/results/h200_gpu.md).
DEFAULT_TILE = GpuTile(8, 8, 128, 128, 8, pipeline=True, min_blocks=2)


def max_registers(tile: GpuTile) -> int | None:
    """The register cap (ptxas -maxrregcount) the kernel is built with: the most
    registers per thread that let ``tile.min_blocks`` blocks of ``tile.threads``
    threads fit the 65536-register file, rounded down to a multiple of 8, or None
    when that is 255 or more (no cap: e.g. one block of <= 256 threads)."""
    cap = (65536 // (tile.threads * tile.min_blocks)) // 8 * 8
    return None if cap >= 255 else cap


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
    """One generated SGEMM kernel: its :class:`GpuTile`, the numba dispatcher, a
    launcher and its resource report.

    ``kernel(A, B, C, alpha, beta)`` launches on device arrays (numba device
    arrays or any ``__cuda_array_interface__`` object, float32, 2-D) with no
    argument checks; :func:`gemm` is the checked front end.
    """

    def __init__(self, tile: GpuTile, dispatcher, sim: bool):
        self.tile = tile
        self.dispatcher = dispatcher
        self.simulated = sim

    def __repr__(self) -> str:
        return f"<SgemmKernel {self.tile.name}{' (simulator)' if self.simulated else ''}>"

    @property
    def name(self) -> str:
        return self.tile.name

    def launch(self, A, B, C, alpha: float = 1.0, beta: float = 0.0, stream=0):
        """Launch on device arrays A (M, K), B (K, N), C (M, N); no checks."""
        m, n = C.shape
        if m == 0 or n == 0:
            return C
        grid = self.tile.grid(m, n)
        self.dispatcher[grid, self.tile.threads, stream](
            A, B, C, np.float32(alpha), np.float32(beta))
        return C

    __call__ = launch

    def compile(self):
        """Compile for :data:`SIGNATURE` on the current GPU (no-op in the simulator)."""
        if not self.simulated:
            self.dispatcher.compile(SIGNATURE)
        return self

    def resources(self) -> dict | None:
        """Compiled resources for :data:`SIGNATURE` on the current GPU, from numba's
        dispatcher: ``regs`` (per thread), ``local_bytes`` (per thread: stack frame
        and spills, 0 when the tile stays in registers), ``shared_bytes`` (static,
        per block), ``max_threads`` (per block). None in the simulator, which has
        none of these. Compiles first if needed."""
        if self.simulated:
            return None
        from numba.cuda.core import sigutils
        self.compile()
        args, _ = sigutils.normalize_signature(SIGNATURE)
        d = self.dispatcher

        def pick(v):
            return int(v[tuple(args)] if isinstance(v, dict) else v)
        return {
            "regs": pick(d.get_regs_per_thread()),
            "local_bytes": pick(d.get_local_mem_per_thread()),
            "shared_bytes": pick(d.get_shared_mem_per_block()),
            "max_threads": pick(d.get_max_threads_per_block()),
        }

    def ptx(self, cc=(9, 0)) -> str:
        """PTX of the kernel for compute capability ``cc`` (needs NVVM, not a GPU)."""
        cuda = _import_cuda()
        ptx, _ = cuda.compile_ptx(self.dispatcher.py_func, SIGNATURE, cc=cc)
        return ptx


_CACHE: dict = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget all compiled kernels (the numba dispatchers)."""
    with _LOCK:
        _CACHE.clear()


def make_sgemm(tm: int = 8, tn: int = 8, bm: int = 128, bn: int = 128, bk: int = 8,
               threads: int | None = None, *, layout: str = "vec4",
               stages: int = 2, index: str = "u32", pipeline: bool = False,
               min_blocks: int = 1) -> SgemmKernel:
    """Build (or fetch from the cache) the SGEMM kernel with a tm x tn thread tile,
    bm x bn block tile, bk-deep shared-memory staging and ``threads`` per block
    (default and only valid value: ``(bm//tm) * (bn//tn)``). ``layout``,
    ``stages``, ``index``, ``pipeline`` and ``min_blocks`` are the levers described
    in :class:`GpuTile` (the fastest measured: ``pipeline=True`` with
    ``min_blocks`` keeping the unpipelined blocks per SM, see :data:`DEFAULT_TILE`).

    Kernels are cached by their :class:`GpuTile` (and simulator mode); numba
    compiles each on its first launch (or :meth:`SgemmKernel.compile`).

    Raises ValueError for an invalid tile (see :class:`GpuTile`) and ImportError
    when numba-cuda is not installed.
    """
    tile = GpuTile(tm, tn, bm, bn, bk, threads or 0, layout, stages, index, pipeline,
                   min_blocks)
    return kernel_for(tile)


def kernel_for(tile: GpuTile) -> SgemmKernel:
    """The cached :class:`SgemmKernel` for ``tile``."""
    sim = simulator_active()
    key = (tile, sim)
    with _LOCK:
        k = _CACHE.get(key)
        if k is None:
            k = _CACHE[key] = SgemmKernel(tile, _build(tile, sim), sim)
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


def _is_device(x) -> bool:
    """A CUDA device array: numba's (the simulator's too) or any object with
    ``__cuda_array_interface__`` (CuPy, PyTorch, ...)."""
    return hasattr(x, "__cuda_array_interface__") or (
        hasattr(x, "copy_to_host") and hasattr(x, "shape") and hasattr(x, "dtype"))


def _as_device(x):
    cuda = _import_cuda()
    if hasattr(x, "copy_to_host"):          # already a numba device array
        return x
    return cuda.as_cuda_array(x)            # zero-copy view of a CAI object


def _check_matrix(x, name: str):
    """(is_device, shape) of an operand; TypeError/ValueError on bad input."""
    if _is_device(x):
        dev = True
        if hasattr(x, "dtype"):
            dtype = np.dtype(x.dtype)
        else:
            dtype = np.dtype(x.__cuda_array_interface__["typestr"])
        shape = tuple(x.shape)
    elif isinstance(x, np.ndarray):
        dev = False
        dtype, shape = x.dtype, x.shape
    else:
        raise TypeError(f"{name} must be a numpy array or a CUDA device array "
                        f"(__cuda_array_interface__), got {type(x).__name__}")
    if dtype != np.float32:
        raise TypeError(f"{name} must be float32, got {dtype}")
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D, got {len(shape)}-D with shape {shape}")
    return dev, shape


def gemm(A, B, C=None, *, alpha: float = 1.0, beta: float = 0.0, tile=None):
    """C := alpha * A @ B + beta * C on the GPU (fp32), BLAS semantics.

    Parameters
    ----------
    A : (M, K) float32, numpy array or CUDA device array
    B : (K, N) float32, same kinds
    C : (M, N) float32, optional
        Updated in place and returned. None: a new (M, N) array is returned
        (numpy when A and B are numpy arrays, else a numba device array) and
        ``beta`` is ignored.
    alpha, beta : float
        Scalars (applied in float32). beta == 0: C is only written (NaN/Inf in C
        do not survive); alpha == 0 or K == 0: C := beta*C, A and B not read;
        M == 0 or N == 0: nothing is touched.
    tile : GpuTile | SgemmKernel | TileSpec | str | tuple, optional
        The kernel: a GPU tile, a built kernel, a CPU tile spec or name (ported by
        :func:`microkernel.gpu.port.plan`), or ``(tm, tn, bm, bn, bk)``. Default
        :data:`DEFAULT_TILE`.

    Returns
    -------
    C (the argument, updated) or the new array.

    Raises
    ------
    TypeError
        An operand that is not a numpy/device array or not float32; non-real
        alpha/beta.
    ValueError
        An operand that is not 2-D, inner dimensions that differ, C of the wrong
        shape, a read-only numpy C, or a grid beyond CUDA's limits.
    ImportError
        numba-cuda is not installed.
    """
    cuda = _import_cuda()
    for nm, s in (("alpha", alpha), ("beta", beta)):
        if not isinstance(s, numbers.Real) or isinstance(s, bool):
            raise TypeError(f"{nm} must be a real number, got {type(s).__name__}")
    a_dev, (m, k) = _check_matrix(A, "A")
    b_dev, (kb, n) = _check_matrix(B, "B")
    if kb != k:
        raise ValueError(f"inner dimensions differ: A is {m}x{k}, B is {kb}x{n}")
    c_dev = False
    if C is not None:
        c_dev, cshape = _check_matrix(C, "C")
        if cshape != (m, n):
            raise ValueError(f"C must be {m}x{n} for A {m}x{k} @ B {k}x{n}, got "
                             f"{cshape[0]}x{cshape[1]}")
        if not c_dev and not C.flags.writeable:
            raise ValueError("C is read-only")
    kern = _resolve_tile(tile)
    gx, gy = kern.tile.grid(m, n)
    if gy > 65535 or gx > 2**31 - 1:
        raise ValueError(f"M={m}, N={n} need a {gx}x{gy} grid, beyond CUDA's limits")
    if max(m, n, k) >= 2**32:
        raise ValueError("dimensions must be < 2**32 (32-bit index arithmetic)")

    if C is None:
        beta = 0.0
        if m == 0 or n == 0:
            return (cuda.device_array((m, n), np.float32) if (a_dev or b_dev)
                    else np.zeros((m, n), np.float32))
    elif m == 0 or n == 0:
        return C

    def to_dev(x, is_dev):
        return _as_device(x) if is_dev else cuda.to_device(np.ascontiguousarray(x))

    dA = to_dev(A, a_dev)
    dB = to_dev(B, b_dev)
    if C is None:
        dC = cuda.device_array((m, n), np.float32)
    elif c_dev:
        dC = to_dev(C, True)
    elif beta == 0:
        dC = cuda.device_array((m, n), np.float32)      # C is not read
    else:
        dC = cuda.to_device(np.ascontiguousarray(C))
    kern.launch(dA, dB, dC, alpha, beta)
    if C is None:
        if a_dev or b_dev:
            return dC
        return dC.copy_to_host()
    if c_dev:
        return C
    if C.flags.c_contiguous:
        dC.copy_to_host(C)
    else:
        C[...] = dC.copy_to_host()
    return C
