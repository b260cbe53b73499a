"""The emulated CPUs of ``microkernel cross`` and the cases each kernel gets on them.

Each :class:`CpuConfig` is one qemu-aarch64 ``-cpu`` value with what its probe must
find: the ISAs it clears (in tile.ISAS order) and the typed features (the probe flags a
tile's types may need beyond its ISA, :attr:`TileSpec.feature`), the VL the SVE code
and the streaming VL the SME code must observe. qemu 7.2's CPUs (``qemu-aarch64 -cpu
help``; the hwcaps Linux reports for each, read here with getauxval):

* ``max,sve-default-vector-length=B,sme-default-vector-length=B,sme_fa64=off``, B in
  BYTES: everything (SVE, SME, dot product, I8MM, BF16, FP16, FHM) at SVE and SME
  lengths of 128..2048 bits. ``sme_fa64=off`` because qemu's ``max`` has FEAT_SME_FA64,
  which makes Advanced SIMD legal in streaming mode: with it off, a NEON instruction
  in the SME kernel's streaming region faults as it would on a core without FA64
  (Apple's M4).
* ``cortex-a72``: NEON only (Armv8.0): every typed ISA refused.
* ``cortex-a76``: NEON with the dot product and FP16 (Armv8.2), no FHM, I8MM, BF16, SVE
  or SME: neondot s8s8/u8u8 and neonfp16 f16h run; neondot u8s8 (SUDOT needs I8MM) and
  neonfp16 f16 (FMLAL needs FHM) are refused with their ISA cleared.
* ``a64fx``: SVE at 512 bits and FP16 without the dot product, I8MM or BF16: sve runs,
  svei8mm and svebf16 (and the NEON ones) are refused.
* ``max,sme=off``: all but SME (SVE at qemu's default 512 bits).
"""
from __future__ import annotations

import dataclasses
import zlib

from ..tile import ISAS, TileSpec

__all__ = ["DEFAULT_VLS", "NEON_CPU", "REFUSAL_CPUS", "CUBES", "CpuConfig", "cpu_configs",
           "cases_for", "identity_cases", "vector_bits_for", "case_seed", "ALL_FEATURES",
           "QUICK_TYPED_ABOVE_BITS"]

#: SVE and SME vector lengths (bits) run by default; qemu takes them in BYTES
DEFAULT_VLS = (128, 256, 512, 1024, 2048)
#: the NEON-only CPU (SVE instructions SIGILL there)
NEON_CPU = "cortex-a72"
#: M = N = K cube shapes, non-multiples of every MR, NR and VL
CUBES = (1, 7, 37, 129)
#: every typed feature flag a tile may need (tile.IsaInfo.needs)
ALL_FEATURES = frozenset(f for info in ISAS.values() for _, f, _ in info.needs)
_A64 = tuple(i for i, info in ISAS.items() if info.arch == "aarch64")


def _isas(*names) -> tuple[str, ...]:
    """scalar and ``names`` in tile.ISAS order (how the probe lists them)."""
    return ("scalar",) + tuple(i for i in _A64 if i in names)


@dataclasses.dataclass(frozen=True)
class CpuConfig:
    """One emulated CPU: ``label``, qemu's -cpu value, the SVE VL it requests (None: no
    SVE), the ISA the probe must choose for fp32, the streaming VL it requests (None:
    no SME), the ISAs the probe must clear and the typed features it must report."""
    label: str
    cpu: str
    vector_bits: int | None
    expect_isa: str
    sme_bits: int | None = None
    isas: tuple[str, ...] = ("scalar", "neon")
    features: frozenset = frozenset()

    def runs(self, spec: TileSpec) -> bool:
        """True when ``spec`` must execute here (else its cases must come back refused)."""
        return spec.isa in self.isas and (spec.feature is None or spec.feature in self.features)


#: the CPUs where typed tiles must be refused, besides the NEON-only one
REFUSAL_CPUS = (
    CpuConfig("dot-fp16", "cortex-a76", None, "neon", None,
              _isas("neon", "neondot", "neonfp16")),
    CpuConfig("a64fx", "a64fx", 512, "sve", None, _isas("neon", "sve", "neonfp16")),
    CpuConfig("sme-off", "max,sme=off", 512, "sve", None,
              _isas(*(i for i in _A64 if i != "sme")), frozenset({"i8mm", "asimdfhm"})),
)


def cpu_configs(vls=DEFAULT_VLS, neon_cpu: str | None = NEON_CPU,
                refusal: bool = True) -> list[CpuConfig]:
    """One ``max`` config per vector length in ``vls`` (bits; SVE and SME at that length),
    the NEON-only CPU unless ``neon_cpu`` is None, and with ``refusal`` the
    :data:`REFUSAL_CPUS`. Raises ValueError for a VL that is not a multiple of 128 in
    128..2048, or for an SME length that is not a power of two (SME's are: Arm ARM,
    "SMCR_ELx.LEN"; qemu then runs SME at the next lower power of two)."""
    out = []
    for bits in vls:
        if bits % 128 or not 128 <= bits <= 2048:
            raise ValueError(f"SVE vector length {bits} bits: must be a multiple of 128 "
                             f"in 128..2048")
        sme = bits if bits & (bits - 1) == 0 else None
        cpu = f"max,sve-default-vector-length={bits // 8}"
        if sme:
            cpu += f",sme-default-vector-length={bits // 8},sme_fa64=off"
        else:
            cpu += ",sme=off"
        out.append(CpuConfig(f"sve-{bits}", cpu, bits, "sve", sme,
                             _isas(*(i for i in _A64 if sme or i != "sme")), ALL_FEATURES if sme
                             else frozenset({"i8mm", "asimdfhm"})))
    if neon_cpu:
        out.append(CpuConfig("neon-only", neon_cpu, None, "neon", None, _isas("neon")))
    if refusal:
        out += REFUSAL_CPUS
    return out


def vector_bits_for(spec: TileSpec, config: CpuConfig) -> int | None:
    """The vector length ``spec``'s run-time MR and NR follow on ``config``: the
    streaming VL for SME, the SVE VL for the other vector-length-agnostic ISAs, None
    for fixed-width tiles."""
    if not spec.is_vla:
        return None
    return config.sme_bits if spec.isa == "sme" else config.vector_bits


def case_seed(seed: int, label: str) -> int:
    """The operand seed of a case, from its label (the same inputs at every VL)."""
    return seed + zlib.crc32(label.encode())


def identity_cases(spec: TileSpec):
    """Cases whose shapes do not depend on the vector length (labels ``same_*``): an SME
    kernel must return bit-identical C for them at every streaming length. Shapes from
    below the smallest tile (8 x 8 at 128 bits for sme_2x2v) to past several of the
    largest (128 x 128 at 2048 bits), unit-stride and strided C, beta 0 and not, K past
    the driver's KC, a tiny blocking and two threads."""
    from ..validate import Case
    integer = spec.gemm_types.integer
    al = (lambda x: {1.5: 2, -0.75: -3, 0.5: -1, 1.25: 3}.get(x, x)) if integer else (lambda x: x)
    out = []
    for m, n, k, alpha, beta, lay in ((5, 3, 7, 1.0, 0.0, "c"), (19, 23, 41, 1.5, 0.5, "c"),
                                      (70, 45, 33, -0.75, 0.0, "s"), (131, 140, 260, 1.25, 1.0, "c"),
                                      (257, 129, 17, 0.5, -1.0, "f")):
        out.append(Case(f"same_{m}x{n}x{k}_{lay}", m, n, k, alpha=al(alpha), beta=al(beta),
                        c_layout=lay))
    out.append(Case("same_small_blocking", 45, 51, 70, alpha=al(1.5), beta=al(0.5),
                    blocking=(9, 16, 16)))
    out.append(Case("same_threads2", 150, 170, 90, alpha=al(1.5), beta=al(0.5), threads=2))
    return out


#: typed vector-length-agnostic tiles take the quick catalogue above this length (bits):
#: qemu's helpers for the SME outer products and the bf16/fp16 arithmetic are slow, and at
#: 1024-2048 bits an SME tile is up to 128 x 128 (the full catalogue there took over ten
#: minutes of emulation; the quick one keeps every M and N remainder)
QUICK_TYPED_ABOVE_BITS = 512


def cases_for(spec: TileSpec, vector_bits: int | None, *, quick: bool = False):
    """The catalogue for ``spec`` at ``vector_bits`` (its SVE or SME VL; unused for fixed
    widths) plus the cubes, in its types (integer alpha and beta for integer C) and K
    group (the layout's), with the blocking the harness uses (model fallback: the
    emulated CPU's caches are unknown, qemu-user shows the host's sysfs); an SME tile
    also gets :func:`identity_cases`. ``quick`` as in the catalogue; typed
    vector-length-agnostic tiles are quick above :data:`QUICK_TYPED_ABOVE_BITS`."""
    from .. import codegen
    from ..blocking import FALLBACK
    from ..validate import Case, catalogue
    bits = vector_bits if spec.is_vla else None
    if spec.info.form != "fma" and bits is not None and bits > QUICK_TYPED_ABOVE_BITS:
        quick = True
    mr, nr = spec.mr_at(bits), spec.nr_at(bits)
    lay = codegen.layout(spec)
    cases = list(catalogue(mr, nr, spec.k_unroll, FALLBACK.kc, quick=quick,
                           kgroup=max(lay.ga, lay.gb), types=spec.types))
    integer = spec.gemm_types.integer
    for s in CUBES:
        alpha, beta = ({1: (1, 0), 7: (2, -1), 37: (-3, 1), 129: (1, 1)} if integer else
                       {1: (1.0, 0.0), 7: (1.5, -0.5), 37: (-0.75, 0.5), 129: (1.25, 1.0)})[s]
        cases.append(Case(f"cube{s}", s, s, s, alpha=alpha, beta=beta,
                          c_layout="f" if s == 37 else "c"))
    if spec.isa == "sme":
        cases += identity_cases(spec)
    return cases
