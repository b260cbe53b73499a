"""AMD matrix-instruction fragment layouts (MFMA on CDNA2/CDNA3, WMMA on RDNA3),
in the format of :mod:`microkernel.gpu.fragments`.

Each operand is a :class:`~microkernel.gpu.fragments.FragmentLayout`:
``owner(row, col) -> (lane, reg, half)`` and its inverse, checked on construction to
be a bijection. A (M x K), B (K x N), C/D (M x N); ``reg`` is the offset from the
instruction's base VGPR, ``half`` the 16-bit half of a packed register (0 = bits
15:0). Everything is the layout with no modifiers (CBSZ = ABID = BLGP = 0, OPSEL 0).

Source: the AMD Matrix Instruction Calculator (github.com/ROCm/amd_matrix_instruction_
calculator, matrix_calculator.py @ 2ef9189), ``--detail-instruction`` ("Register to
matrix element mapping with no modifiers") for each instruction below; the tests check
hand-picked placements printed by its ``--get-register`` and ``--matrix-entry``.

**MFMA (wave64, CDNA2 and CDNA3).** With ``m`` = rows of A (= columns of B = m of C),
``kl`` = k values per lane (registers x elements per register):

- A: ``i = lane % m``, ``k = kl * (lane // m) + per_reg * reg + half``
- B: ``j = lane % n``, ``k`` as for A (B is K x N)
- C/D (fp32): ``i = 4 * (64 // n) * (reg // 4) + 4 * (lane // n) + reg % 4``,
  ``j = lane % n`` (16x16: ``i = 4 * (lane // 16) + reg``; 32x32: ``i = 8 * (reg //
  4) + 4 * (lane // 32) + reg % 4``).

**WMMA (RDNA3, wave32).** A and B are *replicated*: ``A[i][k]`` sits in lanes ``i``
and ``i + 16`` (register ``k // 2``, half ``k % 2``); a :class:`ReplicatedLayout`
holds the 16 distinct lanes and says which physical lanes copy them. C/D (fp32):
``i = 2 * reg + lane // 16``, ``j = lane % 16``.

Not modelled: CDNA3's xf32 instructions, the multi-block (4x4, "_2b"/"_4b") and
sparse (SMFMAC) instructions, f64, integer and fp8 MFMA, RDNA3 wave64 WMMA.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .fragments import FragmentLayout, MmaInstruction, _MmaShape, mma_sync
from .sources import cite

__all__ = ["ReplicatedLayout", "MatrixInstruction", "AMD_INSTRUCTIONS", "instructions_for",
           "get_instruction", "mfma", "SOURCE"]

SOURCE = cite("amd-mic", "--detail-instruction, 'Register to matrix element mapping with "
                         "no modifiers'")


@dataclasses.dataclass(frozen=True)
class ReplicatedLayout(FragmentLayout):
    """A layout whose ``lanes`` distinct lanes are copied ``replicas`` times:
    physical lane ``lane + r * lanes`` (r < replicas) holds what ``lane`` holds.
    Every element is owned exactly once per replica (the parent's bijection check
    covers the distinct lanes)."""
    replicas: int = 1

    def __post_init__(self):
        if self.replicas < 1:
            raise ValueError(f"{self.name}: replicas must be >= 1")
        super().__post_init__()

    @property
    def physical_lanes(self) -> int:
        return self.lanes * self.replicas

    def owners_all(self, row: int, col: int) -> list:
        """Every (physical lane, reg, half) holding element (row, col)."""
        lane, reg, half = self.owner(row, col)
        return [(lane + r * self.lanes, reg, half) for r in range(self.replicas)]

    def physical_element(self, lane: int, reg: int, half: int = 0) -> tuple:
        """(row, col) held by physical lane ``lane`` (any replica)."""
        if not 0 <= lane < self.physical_lanes:
            raise IndexError(f"lane {lane} outside 0..{self.physical_lanes - 1}")
        return self.element(lane % self.lanes, reg, half)


@dataclasses.dataclass(frozen=True)
class MatrixInstruction(_MmaShape):
    """One AMD matrix instruction: D (m x n, fp32) = A (m x k) @ B (k x n) + C.

    ``wave``: lanes that execute it (64 for MFMA, 32 for WMMA wave32); ``cycles``:
    the calculator's "Execution cycles"; ``formulas``: the operand maps as text."""
    key: str
    arch: str
    mnemonic: str
    precision: str
    m: int
    n: int
    k: int
    wave: int
    cycles: int
    a: FragmentLayout
    b: FragmentLayout
    c: FragmentLayout
    formulas: dict
    source: str = SOURCE

    @property
    def acc_regs(self) -> int:
        """fp32 accumulator registers per lane for one C fragment."""
        return self.c.regs

    def as_mma(self) -> MmaInstruction:
        """The same layouts as a :class:`~microkernel.gpu.fragments.MmaInstruction`
        (for :func:`~microkernel.gpu.fragments.mma_sync`)."""
        return MmaInstruction(self.key, self.m, self.n, self.k, self.mnemonic,
                              self.a, self.b, self.c)

    def layouts(self) -> dict:
        return {"A": self.a, "B": self.b, "C": self.c}

    def as_dict(self) -> dict:
        return {"key": self.key, "mnemonic": self.mnemonic, "precision": self.precision,
                "shape": [self.m, self.n, self.k], "wave": self.wave, "cycles": self.cycles,
                "regs_per_lane": {"A": self.a.regs, "B": self.b.regs, "C": self.c.regs},
                "layout": dict(self.formulas), "source": self.source}


_ELEM = {"f16": ("f16", 2), "bf16": ("bf16", 2), "f32": ("f32", 1)}


def _mfma(arch, mnemonic, precision, m, k, cycles) -> MatrixInstruction:
    """A single-block wave64 MFMA with square m x m output (the calculator's
    16x16 and 32x32 shapes)."""
    elem, per_reg = _ELEM[precision]
    n = m
    groups = 64 // m
    kl = k // groups                      # k values per lane
    regs = kl // per_reg
    g_c = 64 // n

    def a_rule(lane, reg, half):
        return lane % m, kl * (lane // m) + per_reg * reg + half

    def b_rule(lane, reg, half):
        return kl * (lane // n) + per_reg * reg + half, lane % n

    def c_rule(lane, reg, half):
        return 4 * g_c * (reg // 4) + 4 * (lane // n) + reg % 4, lane % n

    name = f"{arch}.{mnemonic}"
    src = SOURCE + f" ({mnemonic})"
    hk = " + half" if per_reg == 2 else ""
    a = FragmentLayout(name + ".A", "A", m, k, regs, per_reg, elem, a_rule, src, 64)
    b = FragmentLayout(name + ".B", "B", k, n, regs, per_reg, elem, b_rule, src, 64)
    c = FragmentLayout(name + ".C", "C", m, n, m * n // 64, 1, "f32", c_rule, src, 64)
    kf = f"{kl} * (lane // {m}) + {per_reg} * reg{hk}" if per_reg == 2 else \
        f"{kl} * (lane // {m}) + reg" if regs > 1 else f"lane // {m}"
    ci = (f"4 * (lane // {n}) + reg" if m == 16 else
          f"{4 * g_c} * (reg // 4) + 4 * (lane // {n}) + reg % 4")
    formulas = {"A": f"i = lane % {m}, k = {kf}", "B": f"j = lane % {n}, k = {kf}",
                "C": f"i = {ci}, j = lane % {n}"}
    return MatrixInstruction(name, arch, mnemonic, precision, m, n, k, 64, cycles, a, b, c,
                             formulas, src)


def _wmma(mnemonic, precision, cycles) -> MatrixInstruction:
    """RDNA3 v_wmma_f32_16x16x16_{f16,bf16} in wave32."""
    elem, per_reg = _ELEM[precision]
    name = f"rdna3.{mnemonic}"
    src = SOURCE + f" ({mnemonic}, --wavefront 32)"

    def a_rule(lane, reg, half):
        return lane, 2 * reg + half

    def b_rule(lane, reg, half):
        return 2 * reg + half, lane

    def c_rule(lane, reg, half):
        return 2 * reg + lane // 16, lane % 16

    a = ReplicatedLayout(name + ".A", "A", 16, 16, 8, 2, elem, a_rule, src, 16, replicas=2)
    b = ReplicatedLayout(name + ".B", "B", 16, 16, 8, 2, elem, b_rule, src, 16, replicas=2)
    c = FragmentLayout(name + ".C", "C", 16, 16, 8, 1, "f32", c_rule, src, 32)
    formulas = {"A": "i = lane % 16, k = 2 * reg + half (lanes i and i + 16 hold copies)",
                "B": "j = lane % 16, k = 2 * reg + half (lanes j and j + 16 hold copies)",
                "C": "i = 2 * reg + lane // 16, j = lane % 16"}
    return MatrixInstruction(name, "rdna3", mnemonic, precision, 16, 16, 16, 32, cycles,
                             a, b, c, formulas, src)


def _build() -> dict:
    out = {}
    # the MFMA shapes of both CDNA generations, each with its (mnemonic, cycles) per arch:
    # (precision, m, k, cdna2, cdna3) -- cycles from --detail-instruction
    mfma = [
        ("f16", 16, 16, ("v_mfma_f32_16x16x16f16", 32), ("v_mfma_f32_16x16x16_f16", 16)),
        ("f16", 32, 8, ("v_mfma_f32_32x32x8f16", 64), ("v_mfma_f32_32x32x8_f16", 32)),
        ("bf16", 16, 16, ("v_mfma_f32_16x16x16bf16_1k", 32), ("v_mfma_f32_16x16x16_bf16", 16)),
        ("bf16", 32, 8, ("v_mfma_f32_32x32x8bf16_1k", 64), ("v_mfma_f32_32x32x8_bf16", 32)),
        ("f32", 16, 4, ("v_mfma_f32_16x16x4f32", 32), ("v_mfma_f32_16x16x4_f32", 32)),
        ("f32", 32, 2, ("v_mfma_f32_32x32x2f32", 64), ("v_mfma_f32_32x32x2_f32", 64)),
    ]
    for i, arch in enumerate(("cdna2", "cdna3")):
        for prec, m, k, *per_arch in mfma:
            mnem, cyc = per_arch[i]
            ins = _mfma(arch, mnem, prec, m, k, cyc)
            out[ins.key] = ins
    for mnem, prec in (("v_wmma_f32_16x16x16_f16", "f16"), ("v_wmma_f32_16x16x16_bf16", "bf16")):
        ins = _wmma(mnem, prec, 32)
        out[ins.key] = ins
    return out


#: ``"<arch>.<mnemonic>"`` -> instruction, for arch in cdna2, cdna3, rdna3.
AMD_INSTRUCTIONS: dict = _build()

#: The element type each ``--mma`` precision maps to on AMD (tf32: CDNA has fp32-input
#: MFMA, exact products; CDNA3's xf32 is not modelled; RDNA3 has none).
PRECISION_MAP = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "f32": "f32"}


def instructions_for(arch: str, precision: str = "f16") -> list:
    """The modelled instructions of ``arch`` (cdna2, cdna3, rdna3) taking
    ``precision`` inputs (f16, bf16, f32; tf32 maps to f32), largest output first.
    Empty list when there is none. ValueError for an unknown precision."""
    if precision not in PRECISION_MAP:
        raise ValueError(f"precision must be one of {sorted(PRECISION_MAP)}, got {precision!r}")
    p = PRECISION_MAP[precision]
    found = [i for i in AMD_INSTRUCTIONS.values() if i.arch == arch and i.precision == p]
    return sorted(found, key=lambda i: -(i.m * i.n))


def get_instruction(key: str) -> MatrixInstruction:
    """By ``"<arch>.<mnemonic>"`` or by bare mnemonic (first match). KeyError."""
    if key in AMD_INSTRUCTIONS:
        return AMD_INSTRUCTIONS[key]
    for ins in AMD_INSTRUCTIONS.values():
        if ins.mnemonic == key:
            return ins
    raise KeyError(f"no modelled AMD instruction {key!r}")


def mfma(ins: MatrixInstruction, A, B, C) -> np.ndarray:
    """D = A @ B + C through the layouts: gather A, B, C into per-lane registers,
    run :func:`~microkernel.gpu.fragments.mma_sync` on them, scatter D back.
    Returns the (m, n) float32 result (a check of the layouts, not of the
    hardware's rounding, which the ISA leaves to the implementation)."""
    from .fragments import pack
    mi = ins.as_mma()
    a_regs = pack(ins.a, ins.a.gather(np.asarray(A, np.float32)))
    b_regs = pack(ins.b, ins.b.gather(np.asarray(B, np.float32)))
    c = ins.c.gather(np.asarray(C, np.float32))[..., 0]
    d = mma_sync(mi, a_regs, b_regs, c)
    return ins.c.scatter(d[..., None])
