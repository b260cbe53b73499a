"""The tile parameters of one generated SGEMM kernel: :class:`GpuTile`.

Three levels of tiling, from the block down (the vocabulary of CUTLASS's
"Efficient GEMM in CUDA" and of siboehm's SGEMM worklog, kernel 10):

* **block tile** BM x BN (x BK): the C tile one thread block computes, with the
  BM x BK and BK x BN slices of A and B it stages in shared memory per k step;
* **warp tile** WM x WN: the part of the block tile one warp computes (warp
  tiling; ``wm = wn = 0`` keeps the original layout, in which a warp is simply 32
  consecutive threads of the block's thread grid);
* **thread tile** TM x TN: the register tile of C one thread accumulates, the
  CPU micro-kernel's MR x NR (:mod:`microkernel.gpu.port` maps one to the other).

With a warp tile, the 32 lanes of a warp form an LM x LN grid (LM = WM/TM,
LN = WN/TN, LM*LN = 32) and a lane's TM x TN values are groups of 4 (the
``vec4`` layout) strided by 4*LM rows and 4*LN columns *inside the warp tile*,
so that each 16-byte shared-memory load of a warp touches at most 8 distinct
16-byte words (one wavefront, the rest broadcast) and the warp's loads cover a
compact WM x WN region (CUTLASS SIMT: ``MmaSimtPolicy`` lane layout and
``LaneMmaShape`` 4x4; siboehm kernel 10: WMITER x WNITER sub-tiles).

No numba is needed to import this module.
"""
from __future__ import annotations

import dataclasses
import math
import numbers

__all__ = ["GpuTile", "DEFAULT_TILE", "LEGACY_TILE", "max_registers", "A_PAD", "ASYNC16_BK",
           "WARP_SIZE", "SharedLayout", "warp_for", "parse_warp"]

#: Padding (floats) added to each k-row of the transposed A tile in shared memory
#: by the original (non-warp-tiled) kernel: breaks the BK-way bank conflict of the
#: transposing store and keeps 16-byte rows.
A_PAD = 4
WARP_SIZE = 32

_LAYOUTS = ("vec4", "contiguous")
#: How the warp-tiled kernel stages A and B (:attr:`GpuTile.copy`).
_COPIES = ("regs", "async", "async16")
#: The BK of a ``copy="async16"`` tile: those whose 16-byte copies of A the bank model
#: (:func:`microkernel.gpu.simt_banks.bank_report`) finds conflict-free (BK 4 takes 8
#: wavefronts where 4 would do, BK 20 and 28 take 5).
ASYNC16_BK = (8, 12, 16, 24, 32)


#: The warp-tiled kernel's split-K arrival count in shared memory (a uint32 the block's
#: thread 0 sets, :mod:`microkernel.gpu.simt`): 4 bytes after the 16-byte aligned
#: stages, which ptxas (13.0, sm_90) reports as 16 more bytes per block.
SPLIT_COUNT_BYTES = 16


def _vec_group(t: int, layout: str) -> int:
    if layout == "contiguous":
        return t
    for g in (4, 2):
        if t % g == 0:
            return g
    return 1


def _positive(name, v):
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
        raise ValueError(f"GpuTile.{name} must be a positive integer, got {v!r}")


def _rowa_quarter(rows: int, a_row: int) -> int:
    """Floats per quarter of a k-contiguous A stage of ``rows`` rows of ``a_row`` floats
    (``a_row - 4`` = BK k each): BK % 32 floats of pad after its rows (SharedLayout)."""
    return (rows // 4) * a_row + (a_row - 4) % 32


@dataclasses.dataclass(frozen=True)
class SharedLayout:
    """Shared-memory layout of the warp-tiled kernel (floats; see
    :mod:`microkernel.gpu.simt`).

    A is stored transposed (k-major): element (k, m) of a stage is at
    ``k*a_row + (k // 4)*a_skew + m``. A thread stages A by float4 (4 consecutive
    k of one row of A, one 16-byte global load) and writes the 4 values down a
    column of the transposed tile; the warp's 32 float4s cover ``32 // qpr`` rows
    (``qpr = bk // 4`` float4s per row). With ``a_row % 8 == 0`` and a skew of
    ``32 // qpr`` floats per group of 4 k, the 32 lanes of each of those stores
    hit 32 different banks (no conflict), and every k-row still starts on a
    16-byte boundary for the float4 fragment loads. B is stored as is
    (``k*b_row + n``), written and read by float4.

    With ``a_rows`` (= BM, the ``copy="async16"`` tiles) A is stored as it lies in
    memory, k-contiguous, so that 16-byte ``cp.async`` copies can fill it: row m of the
    block's A tile goes to row ``m // 4`` of quarter ``m % 4`` (rows interleaved by
    4), element (k, m) at ``(m % 4)*a_quarter + (m // 4)*a_row + k`` with ``a_row =
    BK + 4`` and ``a_quarter = (BM // 4)*a_row + BK % 32`` floats. A thread's rows in
    a fragment group are 4 consecutive m (``gm = 4``), so its 4 float4 loads of a
    group read the 4 quarters at one offset. The 16-byte copies of a quarter-warp
    (one 128-bit phase) cover 32 // BK consecutive rows of A, one per quarter: the
    ``BK % 32`` floats between quarters put those rows' BK floats in distinct banks
    (for BM a multiple of 32 and BK in :data:`ASYNC16_BK`), one wavefront per phase
    (checked by
    :func:`microkernel.gpu.simt_banks.bank_report`).
    """
    a_row: int        # floats between consecutive k rows of the A stage
    a_skew: int       # extra offset per group of 4 k rows
    a_stage: int      # floats per A stage (multiple of 4)
    b_row: int
    b_stage: int
    stages: int
    a_rows: int = 0   # 0: A transposed (k-major); BM: A k-contiguous, rows interleaved

    @property
    def floats(self) -> int:
        return self.stages * (self.a_stage + self.b_stage)

    @property
    def a_quarter(self) -> int:
        """Floats between the quarters of a k-contiguous A stage (0 when transposed)."""
        return _rowa_quarter(self.a_rows, self.a_row) if self.a_rows else 0

    def a_index(self, k: int, m: int) -> int:
        if self.a_rows:
            return (m % 4) * self.a_quarter + (m // 4) * self.a_row + k
        return k * self.a_row + (k // 4) * self.a_skew + m

    def b_index(self, k: int, n: int) -> int:
        return k * self.b_row + n


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
        Which rows/columns of the block (warp) tile a thread owns: groups of 4 (2,
        1 when tm/tn is not a multiple of 4) strided over the block (warp) tile
        (16-byte, conflict-free shared loads), or one contiguous tm x tn block.
    stages : {1, 2}, or 2..4 with ``copy="async"``
        Shared-memory buffers (2: global loads of the next k block overlap the
        FMAs of this one; with asynchronous copies, stages - 1 k blocks are in flight).
    index : {"u32", "i64"}
        Index arithmetic: unsigned 32-bit values (default), or numba's default
        signed int64 (the ablation baseline, with negative-index wrap-around code
        on every access; original kernel only).
    pipeline : bool
        Register double buffering: the operands of k+1 are loaded from shared
        memory while the FMAs of k run (original kernel: the inner loop runs two
        k per trip, bk must be even; warp-tiled kernel: the fully unrolled k loop
        is emitted in that order).
    min_blocks : int
        Blocks per SM the registers must allow (1..32): the kernel is built with
        ``max_registers = 65536 / (threads * min_blocks)`` (multiple of 8) when
        that is below 255 (like ``__launch_bounds__(threads, min_blocks)``).
    wm, wn : int
        Warp tile (rows x columns of C per warp), or 0, 0 (default) for the
        original kernel's layout. With a warp tile: ``bm % wm == bn % wn == 0``,
        ``wm % tm == wn % tn == 0``, ``(wm // tm) * (wn // tn) == 32`` lanes,
        ``bk`` a multiple of 4 up to 32, ``index == "u32"``; the kernel is the
        warp-tiled one of :mod:`microkernel.gpu.simt` (float4 global loads, A
        transposed and skewed in shared memory, k loop fully unrolled, split-K).
    copy : {"regs", "async", "async16"}
        How the warp-tiled kernel stages A and B: through registers (global loads,
        then shared stores; default), or with ``cp.async`` copies straight into
        shared memory (sm_80+; :mod:`microkernel.gpu.async_copy`), ``stages - 1`` k
        blocks in flight (the multistage pipeline of CUTLASS's sm80 GEMMs): "async"
        copies A by 4 bytes into its transposed layout, "async16" by 16 bytes into
        a k-contiguous one (:class:`SharedLayout` ``a_rows``; needs ``tm % 4 == 0``
        and the vec4 layout), whose fragments are then read 4 k at a time; B by
        16-byte copies in both.
    group_m : int
        Block rasterization of the warp-tiled kernel: consecutive blocks walk
        ``group_m`` block rows down a column of blocks before moving right, so that
        the blocks resident at once share A's and B's slices in L2 (the grouped
        ordering of Triton's matmul tutorial, "L2 Cache Optimizations"; the mma
        kernel's ``MmaTile.group_m``); 1 (default) = row-major, blockIdx.x along N.

    Raises
    ------
    ValueError
        A parameter that is not a positive integer, a block tile that the thread
        (warp) tile does not divide, a warp tile without 32 lanes, a thread count
        that does not match or exceeds 1024, staging loads that do not divide
        evenly over the threads (original kernel), or more than 48 KB of
        (static) shared memory.
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
    wm: int = 0
    wn: int = 0
    copy: str = "regs"
    group_m: int = 1

    def __post_init__(self):
        for f in ("tm", "tn", "bm", "bn", "bk"):
            _positive(f, getattr(self, f))
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
        if self.index not in ("u32", "i64"):
            raise ValueError(f"index must be 'u32' or 'i64', got {self.index!r}")
        if self.copy not in _COPIES:
            raise ValueError(f"copy must be one of {_COPIES}, got {self.copy!r}")
        if not isinstance(self.group_m, numbers.Integral) or not 1 <= self.group_m <= 64:
            raise ValueError(f"group_m must be an integer in 1..64, got {self.group_m!r}")
        if self.group_m > 1 and not self.wm:
            raise ValueError("group_m > 1 needs a warp tile (the warp-tiled kernel)")
        if self.copy != "regs":
            if not self.wm:
                raise ValueError(f"copy={self.copy!r} needs a warp tile (the warp-tiled kernel)")
            if self.stages not in (2, 3, 4):
                raise ValueError(f"copy={self.copy!r} needs stages 2, 3 or 4, got {self.stages!r}")
            if self.copy == "async16" and (self.tm % 4 or self.layout != "vec4"):
                raise ValueError("copy='async16' reads A's fragments by rows in groups of 4: "
                                 f"it needs tm % 4 == 0 and layout='vec4', got tm={self.tm}, "
                                 f"layout={self.layout!r}")
            if self.copy == "async16" and self.bk not in ASYNC16_BK:
                raise ValueError(f"copy='async16' needs bk in {ASYNC16_BK} (with the others "
                                 f"A's 16-byte copies conflict in shared memory), got {self.bk}")
        elif self.stages not in (1, 2):
            raise ValueError(f"stages must be 1 or 2, got {self.stages!r}")
        if self.wm or self.wn:
            self._check_warp(nt)
        else:
            if self.pipeline and self.bk % 2:
                raise ValueError(f"pipeline=True needs an even bk, got {self.bk}")
            if (self.bm * self.bk) % nt or (self.bk * self.bn) % nt:
                raise ValueError(
                    f"the {self.bm}x{self.bk} A tile and {self.bk}x{self.bn} B tile must "
                    f"split evenly over {nt} threads (choose bk so that bm*bk and bk*bn "
                    f"are multiples of {nt})")
        from .occupancy import STATIC_SHARED_LIMIT
        if self.smem_bytes > STATIC_SHARED_LIMIT:
            raise ValueError(f"{self.name} needs {self.smem_bytes} bytes of shared memory; "
                             f"static shared memory is limited to {STATIC_SHARED_LIMIT}")

    def _check_warp(self, nt: int) -> None:
        for f in ("wm", "wn"):
            _positive(f, getattr(self, f))
        if self.bm % self.wm or self.bn % self.wn:
            raise ValueError(f"block tile {self.bm}x{self.bn} is not a multiple of the "
                             f"warp tile {self.wm}x{self.wn}")
        if self.wm % self.tm or self.wn % self.tn:
            raise ValueError(f"warp tile {self.wm}x{self.wn} is not a multiple of the "
                             f"thread tile {self.tm}x{self.tn}")
        lanes = (self.wm // self.tm) * (self.wn // self.tn)
        if lanes != WARP_SIZE:
            raise ValueError(f"a {self.wm}x{self.wn} warp tile of {self.tm}x{self.tn} "
                             f"thread tiles has {lanes} lanes; a warp has {WARP_SIZE}")
        if self.index != "u32":
            raise ValueError("the warp-tiled kernel uses unsigned 32-bit indices only "
                             f"(index='u32'), got {self.index!r}")
        if self.bk % 4 or self.bk > 32:
            raise ValueError(f"the warp-tiled kernel stages A by float4 along k: bk must "
                             f"be a multiple of 4 up to 32, got {self.bk}")

    # -- derived --------------------------------------------------------------
    @property
    def warp_tiled(self) -> bool:
        """True for the warp-tiled kernel (:mod:`microkernel.gpu.simt`)."""
        return bool(self.wm)

    @property
    def ty(self) -> int:
        """Thread rows in the block (bm // tm)."""
        return self.bm // self.tm

    @property
    def tx(self) -> int:
        """Thread columns in the block (bn // tn)."""
        return self.bn // self.tn

    @property
    def lm(self) -> int:
        """Lane rows in a warp tile (wm // tm; the block's thread rows without one)."""
        return self.wm // self.tm if self.wm else self.ty

    @property
    def ln(self) -> int:
        """Lane columns in a warp tile (wn // tn; the block's thread columns without one)."""
        return self.wn // self.tn if self.wn else self.tx

    @property
    def warps(self) -> tuple[int, int]:
        """Warp grid of the block (rows, columns); (1, 1) without a warp tile."""
        return (self.bm // self.wm, self.bn // self.wn) if self.wm else (1, 1)

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
        """A elements each thread stages per k block (bm*bk / threads; warp-tiled:
        whole float4s, the last pass possibly partial)."""
        if self.warp_tiled:
            return -(-(self.bm * self.bk // 4) // self.threads) * 4
        return self.bm * self.bk // self.threads

    @property
    def b_loads(self) -> int:
        """B elements each thread stages per k block (bk*bn / threads; warp-tiled:
        whole float4s)."""
        if self.warp_tiled:
            return -(-(self.bk * self.bn // 4) // self.threads) * 4
        return self.bk * self.bn // self.threads

    @property
    def shared_layout(self) -> SharedLayout | None:
        """The warp-tiled kernel's :class:`SharedLayout` (None for the original)."""
        if not self.warp_tiled:
            return None
        if self.copy == "async16":
            a_row = self.bk + 4
            return SharedLayout(a_row, 0, 4 * _rowa_quarter(self.bm, a_row), self.bn,
                                self.bk * self.bn, self.stages, a_rows=self.bm)
        qpr = self.bk // 4
        a_row = -(-self.bm // 8) * 8
        a_skew = WARP_SIZE // qpr if qpr > 1 else 0
        a_stage = self.bk * a_row + (qpr - 1) * a_skew
        a_stage = -(-a_stage // 4) * 4
        return SharedLayout(a_row, a_skew, a_stage, self.bn, self.bk * self.bn, self.stages)

    @property
    def smem_bytes(self) -> int:
        """Static shared memory per block, bytes (original: stages*(bk*(bm+4) +
        bk*bn)*4; warp-tiled: :attr:`shared_layout` plus :data:`SPLIT_COUNT_BYTES`)."""
        lay = self.shared_layout
        if lay is not None:
            return lay.floats * 4 + SPLIT_COUNT_BYTES
        return self.stages * (self.bk * (self.bm + A_PAD) + self.bk * self.bn) * 4

    @property
    def name(self) -> str:
        """``gpu_<tm>x<tn>_b<bm>x<bn>x<bk>`` (+ ``_w<wm>x<wn>``, ``_contig``, ``_s<n>``,
        ``_i64``, ``_p2``, ``_mb<n>``, ``_cpa`` / ``_cp16``, ``_g<n>`` when not the default)."""
        s = f"gpu_{self.tm}x{self.tn}_b{self.bm}x{self.bn}x{self.bk}"
        if self.wm:
            s += f"_w{self.wm}x{self.wn}"
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
        if self.copy == "async":
            s += "_cpa"
        elif self.copy == "async16":
            s += "_cp16"
        if self.group_m > 1:
            s += f"_g{self.group_m}"
        return s

    def grid(self, m: int, n: int) -> tuple[int, int]:
        """Launch grid (blocks along N, blocks along M) for an m x n C."""
        return (-(-n // self.bn), -(-m // self.bm))

    def row_of(self, tr: int, i: int) -> int:
        """Block-local row of C held in acc[i, :] by thread row ``tr`` (original
        layout; see :meth:`thread_rows` for any tile)."""
        return (i // self.gm) * (self.ty * self.gm) + tr * self.gm + i % self.gm

    def col_of(self, tc: int, j: int) -> int:
        """Block-local column of C held in acc[:, j] by thread column ``tc``
        (original layout; see :meth:`thread_cols`)."""
        return (j // self.gn) * (self.tx * self.gn) + tc * self.gn + j % self.gn

    def thread_rows(self, tid: int) -> list[int]:
        """Block-local rows of C that thread ``tid`` holds (acc[i, :], i < tm)."""
        if not self.warp_tiled:
            return [self.row_of(tid // self.tx, i) for i in range(self.tm)]
        warp, lane = divmod(tid, WARP_SIZE)
        base = (warp // self.warps[1]) * self.wm + (lane // self.ln) * self.gm
        return [base + (i // self.gm) * (self.lm * self.gm) + i % self.gm
                for i in range(self.tm)]

    def thread_cols(self, tid: int) -> list[int]:
        """Block-local columns of C that thread ``tid`` holds (acc[:, j], j < tn)."""
        if not self.warp_tiled:
            return [self.col_of(tid % self.tx, j) for j in range(self.tn)]
        warp, lane = divmod(tid, WARP_SIZE)
        base = (warp % self.warps[1]) * self.wn + (lane % self.ln) * self.gn
        return [base + (j // self.gn) * (self.ln * self.gn) + j % self.gn
                for j in range(self.tn)]

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.update(name=self.name, smem_bytes=self.smem_bytes, a_loads=self.a_loads,
                 b_loads=self.b_loads, gm=self.gm, gn=self.gn,
                 warp_tile=[self.wm, self.wn] if self.wm else None,
                 lanes=[self.lm, self.ln] if self.wm else None,
                 warps=list(self.warps))
        return d

    def __str__(self) -> str:
        return self.name


#: The original kernel's default tile (gemm()'s default before warp tiling): 8x8 per
#: thread, 128x128 block, 256 threads, register-pipelined, registers capped at 128 for
#: 2 blocks per SM (H200, 4096^3 fp32: 33.5 TFLOP/s, 65% of cuBLAS;
#: bench/results/h200_gpu.md).
LEGACY_TILE = GpuTile(8, 8, 128, 128, 8, pipeline=True, min_blocks=2)

#: The default fixed tile (what ``tile=None`` meant before the shape-adaptive
#: launch, and the largest of its candidates): the same 8x8 thread tile and 128x128
#: block, warps of 32x64 (4 x 8 lanes, CUTLASS's SIMT sgemm 128x128x8 arrangement),
#: registers capped at 128 for 2 blocks per SM (ptxas 13.0, sm_90: 128 registers,
#: no spill; with ``pipeline=True`` it spills 4 bytes).
DEFAULT_TILE = GpuTile(8, 8, 128, 128, 8, min_blocks=2, wm=32, wn=64)


def max_registers(tile: GpuTile) -> int | None:
    """The register cap (ptxas -maxrregcount) the kernel is built with: the most
    registers per thread that let ``tile.min_blocks`` blocks of ``tile.threads``
    threads fit the 65536-register file, rounded down to a multiple of 8, or None
    when that is 255 or more (no cap: e.g. one block of <= 256 threads)."""
    cap = (65536 // (tile.threads * tile.min_blocks)) // 8 * 8
    return None if cap >= 255 else cap


def warp_for(base: GpuTile, warp) -> GpuTile | None:
    """``base`` with a warp tile: ``warp`` "auto" (the most nearly square warp tile
    of 32 lanes, LM x LN in 1x32 .. 32x1, that divides the block tile; 4x8 before
    8x4 on a tie, CUTLASS's SIMT arrangement) or (wm, wn). None when "auto" finds
    none; ValueError for an explicit (wm, wn) that does not fit."""
    bk = base.bk if base.bk % 4 == 0 and base.bk <= 32 else 8
    fields = dict(pipeline=False, min_blocks=1, bk=bk)
    if warp == "auto":
        opts = []
        for lm in (1, 2, 4, 8, 16, 32):
            ln = 32 // lm
            wm, wn = base.tm * lm, base.tn * ln
            if base.bm % wm == 0 and base.bn % wn == 0:
                opts.append((abs(math.log(wm / wn)), lm > ln, abs(lm - ln), wm, wn))
        for *_, wm, wn in sorted(opts):
            try:
                return dataclasses.replace(base, wm=wm, wn=wn, **fields)
            except ValueError:
                continue
        return None
    wm, wn = warp
    return dataclasses.replace(base, wm=wm, wn=wn, **fields)


def parse_warp(text: str):
    """``--warp`` values: "auto", "none" (None) or "WMxWN" -> (wm, wn)."""
    t = text.strip().lower()
    if t == "auto":
        return "auto"
    if t in ("none", "off", "0"):
        return None
    try:
        wm, wn = (int(x) for x in t.split("x"))
    except ValueError:
        raise ValueError(f"--warp must be auto, none or WMxWN (e.g. 32x64), got {text!r}")
    if wm < 1 or wn < 1:
        raise ValueError(f"--warp {text}: WM and WN must be positive (none: no warp tile)")
    return (wm, wn)
