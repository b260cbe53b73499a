"""Warp-level matrix fragments as data: who holds which element of an mma operand.

A tensor-core ``mma.sync`` takes its operands not as matrices but as *fragments*:
each of the 32 lanes of a warp holds a few 32-bit registers, and the instruction
fixes which element of A, B and C/D sits in which lane, register and 16-bit half.
This module writes those layouts down as data (pure numpy, no GPU, no numba), so
that the port, the kernel, the bank-conflict model and the tests all read the
same tables:

- :class:`FragmentLayout`: one operand of one instruction; ``owner(row, col) ->
  (lane, reg, half)`` and its inverse ``element(lane, reg, half) -> (row, col)``,
  checked on construction to be a bijection (every element owned exactly once),
  plus ``gather``/``scatter`` between a matrix and per-lane register arrays.
- :class:`MmaInstruction`: the A, B, C/D layouts of one instruction and its PTX
  mnemonic; :data:`INSTRUCTIONS` maps ``"f16"``, ``"bf16"``, ``"tf32"`` to
  ``mma.sync.aligned.m16n8k16`` (f16/bf16 in, f32 accumulate) and
  ``mma.sync.aligned.m16n8k8`` (tf32 in, f32 accumulate).
- :func:`mma_sync`: one warp-level mma executed in numpy on per-lane register
  arrays (the reference the GPU is checked against, and the CUDA simulator's
  implementation of the intrinsic in :mod:`microkernel.gpu.mma_intrinsics`).
- :func:`lane_map_text` and :func:`lane_map_png`: the "which lane owns which
  element" picture, as text and as a PNG (matplotlib, imported lazily).

Source of every layout: NVIDIA, *Parallel Thread Execution ISA* (PTX ISA 8.x
numbering), section 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating
point type" (``#warp-level-matrix-fragment-mma-16816-float``) and section
9.7.14.5.7 "Matrix Fragments for mma.m16n8k8" (``#warp-level-matrix-fragment-mma-1688``,
the ``.tf32`` tables), with ``groupID = laneid >> 2`` and
``threadID_in_group = laneid % 4``. The PTX element names a0..a7 (b0..b3, c0..c3)
are "element i" here: register ``i // per_reg``, half ``i % per_reg`` (the lower
index in the low 16 bits, as the PTX tables list elements "low to high").

The record is not NVIDIA-specific: ``lanes`` may be 64 and ``rule`` any map, so a
later change can add AMD MFMA/WMMA layouts in the same format.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

__all__ = ["FragmentLayout", "MmaInstruction", "INSTRUCTIONS", "M16N8K16_F16",
           "M16N8K16_BF16", "M16N8K8_TF32", "mma_sync", "round_bf16", "round_tf32",
           "to_bits", "from_bits", "pack", "unpack", "lane_map_text", "lane_map_png",
           "PTX_16816", "PTX_1688"]

PTX_16816 = ("PTX ISA 9.7.14.5.8 'Matrix Fragments for mma.m16n8k16 with floating point "
             "type' (#warp-level-matrix-fragment-mma-16816-float)")
PTX_1688 = ("PTX ISA 9.7.14.5.7 'Matrix Fragments for mma.m16n8k8', .tf32 "
            "(#warp-level-matrix-fragment-mma-1688)")

#: Bits per element of each element type.
ELEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32}


@dataclasses.dataclass(frozen=True)
class FragmentLayout:
    """The lane/register placement of one operand of one warp-level instruction.

    Parameters
    ----------
    name : str
        e.g. ``"m16n8k16.f16.A"``.
    operand : {"A", "B", "C"}
        C stands for both the accumulator input C and the result D.
    rows, cols : int
        Operand shape (A: M x K, B: K x N, C: M x N).
    regs : int
        32-bit registers per lane.
    per_reg : int
        Elements per register (2 for packed 16-bit types, else 1).
    elem : {"f16", "bf16", "tf32", "f32"}
        Element type.
    rule : callable
        ``rule(lane, reg, half) -> (row, col)``: the PTX table as a function.
    source : str
        Where the table comes from (PTX ISA section).
    lanes : int
        Lanes per warp (32; 64 for an AMD wave64 layout).

    Raises
    ------
    ValueError
        The rule is not a bijection between (lane, reg, half) and the rows x cols
        elements (an element owned twice or never, or a position out of range).
    """
    name: str
    operand: str
    rows: int
    cols: int
    regs: int
    per_reg: int
    elem: str
    rule: Callable = dataclasses.field(compare=False, repr=False)
    source: str = ""
    lanes: int = 32

    def __post_init__(self):
        if self.lanes * self.regs * self.per_reg != self.rows * self.cols:
            raise ValueError(f"{self.name}: {self.lanes} lanes x {self.regs} regs x "
                             f"{self.per_reg} != {self.rows}x{self.cols} elements")
        elements = np.empty((self.lanes, self.regs, self.per_reg, 2), np.int64)
        owners = np.full((self.rows, self.cols, 3), -1, np.int64)
        for lane in range(self.lanes):
            for reg in range(self.regs):
                for half in range(self.per_reg):
                    r, c = self.rule(lane, reg, half)
                    if not (0 <= r < self.rows and 0 <= c < self.cols):
                        raise ValueError(f"{self.name}: lane {lane} reg {reg} half {half} -> "
                                         f"({r}, {c}) is outside {self.rows}x{self.cols}")
                    if owners[r, c, 0] >= 0:
                        raise ValueError(f"{self.name}: element ({r}, {c}) owned twice "
                                         f"(lanes {owners[r, c, 0]} and {lane})")
                    owners[r, c] = (lane, reg, half)
                    elements[lane, reg, half] = (r, c)
        object.__setattr__(self, "_elements", elements)
        object.__setattr__(self, "_owners", owners)

    # -- the two directions ---------------------------------------------------------
    def owner(self, row: int, col: int) -> tuple[int, int, int]:
        """(lane, reg, half) holding element (row, col). IndexError outside."""
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            raise IndexError(f"({row}, {col}) outside {self.rows}x{self.cols}")
        return tuple(int(v) for v in self._owners[row, col])

    def element(self, lane: int, reg: int, half: int = 0) -> tuple[int, int]:
        """(row, col) held by ``lane`` in register ``reg``, 16-bit half ``half``."""
        return tuple(int(v) for v in self._elements[lane, reg, half])

    @property
    def elements(self) -> np.ndarray:
        """(lanes, regs, per_reg, 2) int array of (row, col) per register slot."""
        return self._elements.copy()

    @property
    def owners(self) -> np.ndarray:
        """(rows, cols, 3) int array of (lane, reg, half) per element."""
        return self._owners.copy()

    def check(self) -> None:
        """Re-check the invariants: each element owned exactly once, and owner and
        element are inverse maps. Raises AssertionError."""
        seen = np.zeros((self.rows, self.cols), np.int64)
        for lane in range(self.lanes):
            for reg in range(self.regs):
                for half in range(self.per_reg):
                    r, c = self.element(lane, reg, half)
                    seen[r, c] += 1
                    assert self.owner(r, c) == (lane, reg, half)
        assert (seen == 1).all(), f"{self.name}: ownership counts {np.unique(seen)}"

    # -- matrices <-> per-lane arrays ------------------------------------------------
    def gather(self, matrix) -> np.ndarray:
        """The (lanes, regs, per_reg) per-lane values of a rows x cols matrix."""
        m = np.asarray(matrix)
        if m.shape != (self.rows, self.cols):
            raise ValueError(f"{self.name}: expected a {self.rows}x{self.cols} matrix, "
                             f"got {m.shape}")
        e = self._elements
        return m[e[..., 0], e[..., 1]]

    def scatter(self, frag) -> np.ndarray:
        """The rows x cols matrix from (lanes, regs, per_reg) per-lane values."""
        f = np.asarray(frag)
        if f.shape != (self.lanes, self.regs, self.per_reg):
            raise ValueError(f"{self.name}: expected per-lane values of shape "
                             f"{(self.lanes, self.regs, self.per_reg)}, got {f.shape}")
        out = np.empty((self.rows, self.cols), f.dtype)
        e = self._elements
        out[e[..., 0], e[..., 1]] = f
        return out


class _MmaShape:
    """What every matrix instruction of shape ``m`` x ``n`` x ``k`` (the subclass's
    fields) computes: D (m x n) = A (m x k) @ B (k x n) + C."""

    @property
    def flops(self) -> int:
        """2 m n k: one multiply and one add per (i, j, k)."""
        return 2 * self.m * self.n * self.k


@dataclasses.dataclass(frozen=True)
class MmaInstruction(_MmaShape):
    """One warp-level mma: D (m x n, f32) = A (m x k) @ B (k x n) + C, with the
    fragment layout of each operand."""
    key: str
    m: int
    n: int
    k: int
    ptx: str
    a: FragmentLayout
    b: FragmentLayout
    c: FragmentLayout

    @property
    def in_elem(self) -> str:
        return self.a.elem


def _gt(lane):
    return lane >> 2, lane % 4


def _a16816(lane, reg, half):
    g, t = _gt(lane)
    i = reg * 2 + half
    row = g if (i < 2 or 4 <= i < 6) else g + 8
    col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def _b16816(lane, reg, half):
    g, t = _gt(lane)
    i = reg * 2 + half
    return t * 2 + (i & 1) + (8 if i >= 2 else 0), g


def _c16n8(lane, reg, half):
    g, t = _gt(lane)
    i = reg
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def _a1688_tf32(lane, reg, half):
    g, t = _gt(lane)
    return (g if reg in (0, 2) else g + 8), (t if reg in (0, 1) else t + 4)


def _b1688_tf32(lane, reg, half):
    g, t = _gt(lane)
    return (t if reg == 0 else t + 4), g


def _instr16816(elem: str) -> MmaInstruction:
    nm = f"m16n8k16.{elem}"
    return MmaInstruction(
        elem, 16, 8, 16, f"mma.sync.aligned.m16n8k16.row.col.f32.{elem}.{elem}.f32",
        FragmentLayout(nm + ".A", "A", 16, 16, 4, 2, elem, _a16816, PTX_16816),
        FragmentLayout(nm + ".B", "B", 16, 8, 2, 2, elem, _b16816, PTX_16816),
        FragmentLayout(nm + ".C", "C", 16, 8, 4, 1, "f32", _c16n8, PTX_16816))


M16N8K16_F16 = _instr16816("f16")
M16N8K16_BF16 = _instr16816("bf16")
M16N8K8_TF32 = MmaInstruction(
    "tf32", 16, 8, 8, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    FragmentLayout("m16n8k8.tf32.A", "A", 16, 8, 4, 1, "tf32", _a1688_tf32, PTX_1688),
    FragmentLayout("m16n8k8.tf32.B", "B", 8, 8, 2, 1, "tf32", _b1688_tf32, PTX_1688),
    FragmentLayout("m16n8k8.tf32.C", "C", 16, 8, 4, 1, "f32", _c16n8, PTX_1688))

#: precision -> instruction.
INSTRUCTIONS = {"f16": M16N8K16_F16, "bf16": M16N8K16_BF16, "tf32": M16N8K8_TF32}


# -- element encodings -------------------------------------------------------------------

def round_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), returned as
    float32 (NaN stays NaN)."""
    f = np.ascontiguousarray(x, np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    out = (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), np.float32(np.nan), out).reshape(f.shape)


def round_tf32(x) -> np.ndarray:
    """float32 values rounded to tf32 (10 explicit mantissa bits) the way
    ``cvt.rna.tf32.f32`` does: to nearest, ties away from zero; returned as float32
    with the low 13 bits zero (NaN stays NaN, Inf stays Inf)."""
    f = np.ascontiguousarray(x, np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    r = ((b + 0x1000) & 0xFFFFE000) & 0xFFFFFFFF
    out = r.astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(f), out, f).reshape(f.shape)


def to_bits(values, elem: str) -> np.ndarray:
    """Element values -> their bit patterns (uint16 for f16/bf16, uint32 for tf32,
    f32). Values are rounded to the type first (f16: numpy's round to nearest even;
    bf16: :func:`round_bf16`; tf32: :func:`round_tf32`)."""
    v = np.asarray(values)
    if elem == "f16":
        return v.astype(np.float16).view(np.uint16)
    if elem == "bf16":
        return (round_bf16(v.astype(np.float32)).view(np.uint32) >> 16).astype(np.uint16)
    if elem == "tf32":
        return round_tf32(v.astype(np.float32)).view(np.uint32)
    if elem == "f32":
        return np.ascontiguousarray(v, np.float32).view(np.uint32)
    raise ValueError(f"unknown element type {elem!r}")


def from_bits(bits, elem: str) -> np.ndarray:
    """Bit patterns -> float32 values. tf32 ignores the low 13 bits."""
    b = np.asarray(bits)
    if elem == "f16":
        return b.astype(np.uint16).view(np.float16).astype(np.float32)
    if elem == "bf16":
        return (b.astype(np.uint32) << 16).view(np.float32)
    if elem == "tf32":
        return (b.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    if elem == "f32":
        return b.astype(np.uint32).view(np.float32)
    raise ValueError(f"unknown element type {elem!r}")


def pack(layout: FragmentLayout, values) -> np.ndarray:
    """(lanes, regs, per_reg) element values -> (lanes, regs) uint32 registers
    (16-bit types: element ``half`` 0 in bits 0-15, half 1 in bits 16-31)."""
    bits = to_bits(values, layout.elem).astype(np.uint32)
    if layout.per_reg == 1:
        return bits[..., 0]
    return bits[..., 0] | (bits[..., 1] << np.uint32(16))


def unpack(layout: FragmentLayout, regs) -> np.ndarray:
    """(lanes, regs) uint32 registers -> (lanes, regs, per_reg) float32 values."""
    r = np.asarray(regs, np.uint32)
    if layout.per_reg == 1:
        return from_bits(r, layout.elem)[..., None]
    lo = from_bits(r & np.uint32(0xFFFF), layout.elem)
    hi = from_bits(r >> np.uint32(16), layout.elem)
    return np.stack([lo, hi], axis=-1)


def mma_sync(instr: MmaInstruction | str, a_regs, b_regs, c) -> np.ndarray:
    """One warp-level ``mma.sync`` in numpy: D = A @ B + C.

    Parameters
    ----------
    instr : MmaInstruction or {"f16", "bf16", "tf32"}
    a_regs : (32, a.regs) uint32
        Each lane's A registers (packed as :func:`pack` does).
    b_regs : (32, b.regs) uint32
    c : (32, 4) float32
        Each lane's accumulator registers c0..c3.

    Returns
    -------
    (32, 4) float32: each lane's d0..d3.

    The model: every product of two inputs is exact (true of f16, bf16 and tf32
    products in float64), the m x n x k sum plus C is taken in float64 and rounded
    once to float32. PTX leaves "the accumulation order, rounding and handling of
    subnormal inputs" unspecified (section 9.7.14.5.14, "Precision and rounding"),
    so the GPU agrees with this within the error bound, not bit for bit; the
    *placement* of elements (which lane holds what) is exact.
    """
    ins = INSTRUCTIONS[instr] if isinstance(instr, str) else instr
    A = ins.a.scatter(unpack(ins.a, a_regs)).astype(np.float64)
    B = ins.b.scatter(unpack(ins.b, b_regs)).astype(np.float64)
    C = ins.c.scatter(np.asarray(c, np.float32).reshape(ins.c.lanes, ins.c.regs, 1))
    D = (A @ B + C.astype(np.float64)).astype(np.float32)
    return ins.c.gather(D)[..., 0]


# -- pictures ------------------------------------------------------------------------

def _label(layout: FragmentLayout, lane: int, reg: int, half: int) -> str:
    i = reg * layout.per_reg + half
    return f"T{lane}:{layout.operand.lower()}{i}"


def lane_map_text(layout: FragmentLayout) -> str:
    """The layout as a grid: each element ``(row, col)`` shows ``T<lane>:<x><i>``
    (lane and PTX element name: a0..a7, b0..b3, c0..c3), like the PTX figures."""
    cells = [[_label(layout, *layout.owner(r, c)) for c in range(layout.cols)]
             for r in range(layout.rows)]
    w = max(len(s) for row in cells for s in row)
    head = f"{layout.name} ({layout.rows}x{layout.cols}, {layout.regs} regs x " \
           f"{layout.per_reg} per lane; {layout.source})"
    lines = [head, "row\\col " + " ".join(f"{c:>{w}}" for c in range(layout.cols))]
    for r, row in enumerate(cells):
        lines.append(f"{r:>7} " + " ".join(f"{s:>{w}}" for s in row))
    return "\n".join(lines)


def lane_map_png(instr: MmaInstruction | str, path) -> str:
    """Draw the A, B and C/D layouts of ``instr`` into one PNG at ``path``: each
    element coloured by its lane and labelled with lane and element name. Needs
    matplotlib (the ``[real]`` extra; ImportError otherwise). Returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ins = INSTRUCTIONS[instr] if isinstance(instr, str) else instr
    lays = (ins.a, ins.b, ins.c)
    fig, axes = plt.subplots(1, 3, figsize=(1.5 + sum(x.cols for x in lays) * 0.55, 9),
                             gridspec_kw={"width_ratios": [x.cols for x in lays]})
    cmap = plt.get_cmap("hsv", 32)
    for ax, lay in zip(axes, lays):
        lanes = lay.owners[..., 0]
        ax.imshow(lanes % 32, cmap=cmap, vmin=0, vmax=31, alpha=0.45)
        for r in range(lay.rows):
            for c in range(lay.cols):
                ln, reg, half = lay.owner(r, c)
                ax.text(c, r, f"T{ln}\n{lay.operand.lower()}{reg * lay.per_reg + half}",
                        ha="center", va="center", fontsize=5.5)
        ax.set_title(f"{lay.operand} ({lay.rows}x{lay.cols}, {lay.elem})", fontsize=9)
        ax.set_xticks(range(lay.cols))
        ax.set_yticks(range(lay.rows))
        ax.tick_params(labelsize=6)
    fig.suptitle(f"{ins.ptx}: lane (T) and element of each matrix position\n"
                 f"{ins.a.source}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return str(path)
