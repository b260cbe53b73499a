"""The tensor-core kernel's tile, its shared-memory layouts and its lane addresses.

Pure Python (no numba): :class:`MmaTile` is every compile-time constant of one
``mma.sync`` GEMM kernel of :mod:`microkernel.gpu.mma_kernel`, and the functions
here say, lane by lane, which shared-memory bytes each of its instructions
touches. The kernel computes its addresses with the same formulas (the simulator
test ``test_kernel_addresses_match_the_model`` records the addresses the kernel
really issues and compares them with :func:`requests`), and the bank-conflict
model (:mod:`microkernel.gpu.banks`) prices them.

Hierarchy (CUTLASS's terms): a **block tile** BM x BN of C per thread block, split
over WARPS_M x WARPS_N warps; each warp owns a **warp tile** WM x WN, i.e.
MI = WM/16 by NI = WN/8 m16n8 accumulator fragments (4 fp32 per lane each); per
k step of the instruction (16 for f16/bf16, 8 for tf32) a warp loads MI A
fragments and NI B fragments from shared memory and issues MI*NI ``mma.sync``.
A and B are staged through shared memory in BK-deep slices, ``stages`` of them in
flight (``cp.async`` multi-stage pipeline).

Shared-memory layout of a stage (row-major; 16-byte *chunks* are the unit of
``cp.async`` and of an ldmatrix row):

- A slice: BM rows of BK elements (k contiguous); read with
  ``ldmatrix.x4`` (16-bit types and tf32 alike: an 8x8 b16 matrix is an 8x4 tf32
  matrix, whose lane-wise result is exactly the m16n8k8 tf32 A fragment);
- B slice: BK rows (k) of BN elements (n contiguous, as B is stored); read with
  ``ldmatrix.x4.trans`` (16-bit) or with 32-bit ``ld.shared`` (tf32: .trans moves
  16-bit halves, which would split a tf32 value);
- ``smem="none"``: rows back to back; ``"pad"``: each row padded by 16 bytes (32
  for the tf32 B slice, whose 4-row 32-bit reads need an 8-bank shift per row);
  ``"swizzle"``: no padding, chunk ``c`` of row ``r`` stored at chunk
  ``c ^ (((r >> shift) * mul) & mask)`` (an XOR swizzle in the spirit of
  CUTLASS's ``Swizzle<B, M, S>``: it permutes 16-byte chunks within the same
  128-byte-aligned group, so ``cp.async`` targets stay aligned).
"""
from __future__ import annotations

import dataclasses
import math
import numbers

from . import banks
from .fragments import INSTRUCTIONS

__all__ = ["MmaTile", "SmemLayout", "SMEM_MODES", "PIPELINES", "DYNAMIC_SHARED_LIMIT", "smem_layout", "requests",
           "bank_report", "estimate_regs", "REG_OVERHEAD", "PRECISIONS"]

PRECISIONS = ("f16", "bf16", "tf32")
SMEM_MODES = ("swizzle", "pad", "none")
#: Registers beyond accumulators and fragments (addresses, loop state, epilogue):
#: calibrated on ptxas 13.0 sm_90 for this kernel (see :func:`estimate_regs`).
REG_OVERHEAD = 40
STATIC_SHARED_LIMIT = 48 * 1024
#: sm_90's opt-in limit of dynamic shared memory per block (227 KB).
DYNAMIC_SHARED_LIMIT = 227 * 1024
PIPELINES = ("simple", "pipelined")


@dataclasses.dataclass(frozen=True)
class SmemLayout:
    """Byte offset of (row, byte-in-row) in one shared-memory slice.

    ``offset(r, b) = r * stride + ((b >> 4) ^ (((r >> shift) * mul) & mask)) * 16
    + (b & 15)`` with ``stride = row_bytes + pad``."""
    rows: int
    row_bytes: int
    pad: int = 0
    shift: int = 0
    mul: int = 0
    mask: int = 0

    @property
    def stride(self) -> int:
        return self.row_bytes + self.pad

    @property
    def bytes(self) -> int:
        return self.rows * self.stride

    def offset(self, row: int, byte: int) -> int:
        x = ((row >> self.shift) * self.mul) & self.mask
        return row * self.stride + (((byte >> 4) ^ x) << 4) + (byte & 15)

    def describe(self) -> str:
        if self.mask:
            return (f"{self.rows}x{self.row_bytes} B, swizzled: chunk c of row r at "
                    f"c ^ (((r >> {self.shift}) * {self.mul}) & {self.mask})")
        if self.pad:
            return f"{self.rows}x{self.row_bytes} B rows padded by {self.pad} B"
        return f"{self.rows}x{self.row_bytes} B rows, unpadded"


def _swizzle_for(row_bytes: int, tf32_b: bool) -> tuple[int, int, int]:
    cpr = row_bytes // 16
    if tf32_b:              # the XOR may not leave the row: mask < chunks per row
        return 0, 2, min(7, cpr - 1)
    if cpr >= 8:
        return 0, 1, 7
    return int(math.log2(8 // cpr)), 1, cpr - 1


def smem_layout(rows: int, row_bytes: int, mode: str, *, tf32_b: bool = False) -> SmemLayout:
    """The layout of one slice of ``rows`` rows of ``row_bytes`` bytes under
    ``mode`` ("swizzle", "pad", "none"); ``tf32_b``: the tf32 B slice (read with
    32-bit loads of 4 rows at a time, see the module docstring)."""
    if mode == "none":
        return SmemLayout(rows, row_bytes)
    if mode == "pad":
        return SmemLayout(rows, row_bytes, pad=32 if tf32_b else 16)
    if mode == "swizzle":
        s, m, k = _swizzle_for(row_bytes, tf32_b)
        return SmemLayout(rows, row_bytes, 0, s, m, k)
    raise ValueError(f"smem must be one of {SMEM_MODES}, got {mode!r}")


def _pos_int(name, v):
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
        raise ValueError(f"MmaTile.{name} must be a positive integer, got {v!r}")


@dataclasses.dataclass(frozen=True)
class MmaTile:
    """Compile-time constants of one tensor-core GEMM kernel.

    Parameters
    ----------
    precision : {"f16", "bf16", "tf32"}
        Input type; f32 accumulation and output. f16/bf16: ``mma.m16n8k16``;
        tf32: ``mma.m16n8k8`` on float32 inputs rounded with ``cvt.rna.tf32.f32``.
    wm, wn : int
        Warp tile (rows x columns of C per warp): wm a multiple of 16, wn of 16
        (B fragments are loaded two n8 tiles per ``ldmatrix.x4``).
    warps_m, warps_n : int
        Warps per block along M and N (block tile ``wm*warps_m x wn*warps_n``).
    bk : int
        Depth of a shared-memory slice: a multiple of 16 (f16/bf16) or 8 (tf32),
        with 16-byte rows (bk*2 or bk*4 bytes a multiple of 16).
    stages : int
        Slices in flight (cp.async pipeline), >= 2.
    smem : {"swizzle", "pad", "none"}
        Shared-memory layout (see the module docstring).
    pipeline : {"simple", "pipelined"}
        Main-loop form. "simple": per slice wait + barrier, then the cp.async of
        slice it, then its math (indices recomputed per slice). "pipelined"
        (CUTLASS's multistage order): per-thread copy offsets and per-lane
        ldmatrix offsets computed once in 32 bits, stages rotated by add/select,
        the next slice's cp.async issued before the current slice's math, the
        wait + barrier before the last k step so that the next slice's first
        fragments are loaded while the last k step's mma run.
    frag_buffers : {1, 2}
        Register sets of A/B fragments ("pipelined" only): 2 loads k step kk+1
        into the other set while k step kk's mma.sync run (CUTLASS's warp-level
        fragment double buffering).
    group_m : int
        Grouped (block-swizzled) grid order: consecutive blocks walk down
        ``group_m`` block rows before moving right (L2 reuse); 1 = row-major.
    dynamic_smem : bool
        Shared memory as a dynamic array sized at launch (up to 227 KB per block
        on sm_90, the kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES attribute raised at
        first launch) instead of a static array (48 KB).

    Raises
    ------
    ValueError
        A bad parameter, more than 1024 threads, or more than 48 KB of static
        (227 KB of dynamic) shared memory.
    """
    precision: str = "f16"
    wm: int = 64
    wn: int = 64
    warps_m: int = 2
    warps_n: int = 2
    bk: int = 32
    stages: int = 3
    smem: str = "swizzle"
    pipeline: str = "simple"
    frag_buffers: int = 1
    group_m: int = 1
    dynamic_smem: bool = False

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        for f in ("wm", "wn", "warps_m", "warps_n", "bk", "stages"):
            _pos_int(f, getattr(self, f))
        if self.wm % 16 or self.wn % 16:
            raise ValueError(f"warp tile {self.wm}x{self.wn}: wm and wn must be multiples "
                             f"of 16")
        if self.bk % self.instr.k or (self.bk * self.esize) % 16:
            raise ValueError(f"bk={self.bk} must be a multiple of {self.instr.k} with "
                             f"16-byte rows for {self.precision}")
        if self.stages < 2:
            raise ValueError(f"stages must be >= 2, got {self.stages}")
        if self.smem not in SMEM_MODES:
            raise ValueError(f"smem must be one of {SMEM_MODES}, got {self.smem!r}")
        if self.pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {PIPELINES}, got {self.pipeline!r}")
        if self.frag_buffers not in (1, 2) or isinstance(self.frag_buffers, bool):
            raise ValueError(f"frag_buffers must be 1 or 2, got {self.frag_buffers!r}")
        if self.frag_buffers == 2 and self.pipeline != "pipelined":
            raise ValueError("frag_buffers=2 needs pipeline='pipelined'")
        _pos_int("group_m", self.group_m)
        if not isinstance(self.dynamic_smem, bool):
            raise ValueError(f"dynamic_smem must be a bool, got {self.dynamic_smem!r}")
        if self.threads > 1024:
            raise ValueError(f"{self.threads} threads per block > 1024")
        if self.smem_bytes > self.smem_limit:
            kind = "dynamic" if self.dynamic_smem else "static"
            raise ValueError(f"{self.name} needs {self.smem_bytes} bytes of shared memory; "
                             f"{kind} shared memory is limited to {self.smem_limit}")

    # -- derived ---------------------------------------------------------------------
    @property
    def instr(self):
        return INSTRUCTIONS[self.precision]

    @property
    def esize(self) -> int:
        """Bytes per input element (2 or 4)."""
        return 4 if self.precision == "tf32" else 2

    @property
    def mi(self) -> int:
        return self.wm // 16

    @property
    def ni(self) -> int:
        return self.wn // 8

    @property
    def ki(self) -> int:
        """Instruction k steps per slice."""
        return self.bk // self.instr.k

    @property
    def bm(self) -> int:
        return self.wm * self.warps_m

    @property
    def bn(self) -> int:
        return self.wn * self.warps_n

    @property
    def warps(self) -> int:
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def fragments(self) -> int:
        """m16n8 accumulator fragments per warp (MI*NI)."""
        return self.mi * self.ni

    @property
    def accumulators(self) -> int:
        """fp32 C values per lane: the instruction's C registers (4) per fragment."""
        return self.fragments * self.instr.c.regs

    @property
    def a_layout(self) -> SmemLayout:
        return self.a_layout_for(self.smem)

    @property
    def b_layout(self) -> SmemLayout:
        return self.b_layout_for(self.smem)

    def a_layout_for(self, mode: str) -> SmemLayout:
        """The A slice's layout under shared-memory mode ``mode``."""
        return smem_layout(self.bm, self.bk * self.esize, mode)

    def b_layout_for(self, mode: str) -> SmemLayout:
        """The B slice's layout under shared-memory mode ``mode``."""
        return smem_layout(self.bk, self.bn * self.esize, mode,
                           tf32_b=self.precision == "tf32")

    @property
    def a_chunks(self) -> int:
        return self.bm * self.bk * self.esize // 16

    @property
    def b_chunks(self) -> int:
        return self.bk * self.bn * self.esize // 16

    @property
    def a_per(self) -> int:
        """A chunks per thread per slice (the last round partial when the threads
        do not divide the chunks)."""
        return -(-self.a_chunks // self.threads)

    @property
    def b_per(self) -> int:
        return -(-self.b_chunks // self.threads)

    @property
    def stage_bytes(self) -> int:
        """One stage: the A slice, then the B slice (each 128-byte aligned)."""
        return _round(self.a_layout.bytes, 128) + _round(self.b_layout.bytes, 128)

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def smem_limit(self) -> int:
        return DYNAMIC_SHARED_LIMIT if self.dynamic_smem else STATIC_SHARED_LIMIT

    @property
    def name(self) -> str:
        s = (f"mma_{self.precision}_w{self.wm}x{self.wn}_b{self.bm}x{self.bn}x{self.bk}"
             f"_s{self.stages}_{self.smem}")
        if self.pipeline == "pipelined":
            s += f"_pipe{self.frag_buffers}"
        if self.group_m > 1:
            s += f"_g{self.group_m}"
        if self.dynamic_smem:
            s += "_dyn"
        return s

    def grid(self, m: int, n: int) -> tuple[int, int]:
        """(blocks along N, blocks along M)."""
        return (max(1, -(-n // self.bn)), max(1, -(-m // self.bm)))

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.update(name=self.name, bm=self.bm, bn=self.bn, threads=self.threads,
                 mi=self.mi, ni=self.ni, ki=self.ki, fragments=self.fragments,
                 accumulators=self.accumulators, smem_bytes=self.smem_bytes,
                 instruction=self.instr.ptx,
                 a_layout=self.a_layout.describe(), b_layout=self.b_layout.describe())
        return d

    def __str__(self) -> str:
        return self.name


def _round(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def estimate_regs(tile: MmaTile) -> int:
    """Registers per thread estimated before compiling: the 4*MI*NI accumulators,
    one k step of fragments per fragment buffer (4*MI A registers, 2*NI B
    registers; tf32 the same count of 32-bit registers), plus :data:`REG_OVERHEAD` for addresses, loop
    state and the epilogue."""
    return tile.accumulators + tile.frag_buffers * (4 * tile.mi + 2 * tile.ni) + REG_OVERHEAD


# -- lane addresses of every shared-memory instruction (per warp, per slice) ------------

def a_ldsm_address(tile: MmaTile, warp_m: int, lane: int, mi: int, kk: int,
                   mode: str | None = None) -> int:
    """Byte offset (in the A slice) lane ``lane`` hands to ``ldmatrix.x4`` for
    fragment ``mi`` at k step ``kk``: matrix ``lane // 8`` = (rows 0-7 | 8-15) x
    (k chunk 0 | 1), row ``lane % 8`` of it."""
    row = warp_m * tile.wm + mi * 16 + (lane % 8) + 8 * ((lane // 8) % 2)
    return tile.a_layout_for(mode or tile.smem).offset(row, (2 * kk + lane // 16) * 16)


def b_ldsm_address(tile: MmaTile, warp_n: int, lane: int, p: int, kk: int,
                   mode: str | None = None) -> int:
    """Byte offset (in the B slice) for ``ldmatrix.x4.trans`` of the B fragments
    ni = 2p and 2p+1 at k step ``kk`` (16-bit types): matrix ``lane // 8`` =
    (k 0-7 | 8-15) x (n 0-7 | 8-15), k row ``lane % 8`` of it."""
    k = kk * 16 + (lane % 8) + 8 * ((lane // 8) % 2)
    n = warp_n * tile.wn + p * 16 + 8 * (lane // 16)
    return tile.b_layout_for(mode or tile.smem).offset(k, n * tile.esize)


def b_lds32_address(tile: MmaTile, warp_n: int, lane: int, ni: int, kk: int, j: int,
                    mode: str | None = None) -> int:
    """Byte offset (in the B slice) of tf32 B element b``j`` of fragment ``ni`` at
    k step ``kk``: B[k = 8kk + t + 4j, n = 8ni + g] (PTX m16n8k8 .tf32 table)."""
    g, t = lane >> 2, lane % 4
    return tile.b_layout_for(mode or tile.smem).offset(kk * 8 + t + 4 * j,
                                                       (warp_n * tile.wn + ni * 8 + g) * 4)


def a_store_address(tile: MmaTile, tid: int, i: int,
                    mode: str | None = None) -> tuple[int, int, int]:
    """(row, 16-byte chunk, byte offset) of the i-th A chunk thread ``tid`` copies
    with ``cp.async``: chunk e = tid + i*threads (0 past the slice's last chunk),
    row e // cpr, chunk e % cpr."""
    cpr = tile.bk * tile.esize // 16
    e = tid + i * tile.threads
    e = e if e < tile.a_chunks else 0
    r, c = e // cpr, e % cpr
    return r, c, tile.a_layout_for(mode or tile.smem).offset(r, c * 16)


def b_store_address(tile: MmaTile, tid: int, i: int,
                    mode: str | None = None) -> tuple[int, int, int]:
    """(k row, 16-byte chunk, byte offset) of the i-th B chunk of thread ``tid``."""
    cpr = tile.bn * tile.esize // 16
    e = tid + i * tile.threads
    e = e if e < tile.b_chunks else 0
    r, c = e // cpr, e % cpr
    return r, c, tile.b_layout_for(mode or tile.smem).offset(r, c * 16)


def requests(tile: MmaTile, warp: int = 0, mode: str | None = None) -> list[banks.Request]:
    """Every shared-memory request warp ``warp`` issues per slice (per BK of K),
    with its 32 lane byte offsets (relative to the slice), under the tile's
    shared-memory layout or ``mode``."""
    wmi, wni = warp // tile.warps_n, warp % tile.warps_n
    md = mode or tile.smem
    out = []
    # a thread past the last chunk copies chunk 0 again (as the kernel does)
    for i in range(tile.a_per):
        out.append(banks.Request(f"A cp.async store #{i}", "cp.async16", tuple(
            a_store_address(tile, warp * 32 + ln, i, md)[2] for ln in range(32))))
    for i in range(tile.b_per):
        out.append(banks.Request(f"B cp.async store #{i}", "cp.async16", tuple(
            b_store_address(tile, warp * 32 + ln, i, md)[2] for ln in range(32))))
    for kk in range(tile.ki):
        for mi in range(tile.mi):
            out.append(banks.Request(f"A ldmatrix.x4 mi={mi} kk={kk}", "ldmatrix.x4", tuple(
                a_ldsm_address(tile, wmi, ln, mi, kk, md) for ln in range(32))))
        if tile.precision == "tf32":
            for ni in range(tile.ni):
                for j in (0, 1):
                    out.append(banks.Request(f"B ld.shared.b32 ni={ni} kk={kk} b{j}", "ld32",
                                             tuple(b_lds32_address(tile, wni, ln, ni, kk, j, md)
                                                   for ln in range(32))))
        else:
            for p in range(tile.ni // 2):
                out.append(banks.Request(f"B ldmatrix.x4.trans p={p} kk={kk}", "ldmatrix.x4",
                                         tuple(b_ldsm_address(tile, wni, ln, p, kk, md)
                                               for ln in range(32))))
    return out


def _group(costs) -> list[dict]:
    """Requests of the same operand and kind with the same cost, merged."""
    rows: dict = {}
    for c in costs:
        op = c.name.split(" ")[0] + " " + c.name.split(" ")[1].split("#")[0]
        key = (op, c.kind, c.wavefronts, c.ideal)
        r = rows.setdefault(key, {"request": op, "kind": c.kind, "count": 0,
                                  "wavefronts": c.wavefronts, "ideal": c.ideal,
                                  "conflicts": c.conflicts})
        r["count"] += 1
    return list(rows.values())


def bank_report(tile: MmaTile, modes=SMEM_MODES) -> dict:
    """Wavefronts per warp request of each shared load and store of ``tile`` under
    each shared-memory layout in ``modes`` (the same tile otherwise; the model
    needs no launch, so a layout that would not fit 48 KB is priced too). Returns
    ``{mode: {"requests": [grouped rows], "wavefronts": per slice per warp,
    "ideal", "load_conflicts", "store_conflicts", "layout"}}``."""
    out = {}
    for mode in modes:
        costs = [banks.cost(r) for r in requests(tile, 0, mode)]
        loads = [c for c in costs if not c.kind.startswith(("cp.", "st"))]
        stores = [c for c in costs if c.kind.startswith(("cp.", "st"))]
        out[mode] = {"requests": _group(costs),
                     "wavefronts": sum(c.wavefronts for c in costs),
                     "ideal": sum(c.ideal for c in costs),
                     "load_conflicts": sum(c.conflicts for c in loads),
                     "store_conflicts": sum(c.conflicts for c in stores),
                     "layout": {"A": tile.a_layout_for(mode).describe(),
                                "B": tile.b_layout_for(mode).describe()}}
    return out
