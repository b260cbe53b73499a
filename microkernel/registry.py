"""The one list: built-in kernels, each ISA's default, stress tiles, benchmark sets.

Everything that needs a list of kernels reads it from here: dispatch (``kernels()``,
``get_kernel()``'s default), ``microkernel list``, the codegen (the committed sources in
``c_src/ukernels/`` and the X-macro list ``c_src/ukernels/mk_kernels.inc`` that the C
mains include, after IREE's ``mmt4d_x86_64_tiles.inl``), the tests (edge catalogue,
sanitizer and old-CPU harnesses, the aarch64 cross harness), the benchmarks and the
device scripts (``python -m microkernel list --names --isa avx512``).

A kernel's name is its metadata (docs/naming.md): ``<isa>[_<types>]_<MR>x<NR>[v][_u<K>]``.
Built-in tiles are just specs: a user's tile takes exactly the same path.
"""
from __future__ import annotations

import functools

from .tile import ISAS, TileSpec

__all__ = ["BUILTIN", "DEFAULTS", "TYPED_DEFAULTS", "STRESS", "BENCH_SQUARES",
           "DEVICE_AVX512", "DEVICE_TYPED", "typed_default", "builtin", "default", "names", "stress", "is_builtin", "spec"]

#: The built-in tiles, grouped by ISA, each ISA's default first.
BUILTIN: tuple[TileSpec, ...] = tuple(TileSpec.from_name(n) for n in (
    # avx512_8x32_u4: 16 zmm accumulators, 2 B vectors, K loop unrolled 4 times, no spill:
    # 96% of the FMA peak in L1 on the lent Sapphire Rapids host against 85% for
    # avx512_8x16, and ahead of it inside gemm() (docs/design-notes.md, register tiles)
    "avx512_8x32_u4",
    # the textbook AVX-512 tile: 8 zmm accumulators, exactly FMA latency x units
    "avx512_8x16",
    # avx2_4x24_u8: 12 accumulators, 3 B vectors, 16 of 16 ymm, K unrolled 8 times, no
    # spill: the leader of the avx2 sweep on Zen 3 (docs/performance.md)
    "avx2_4x24_u8",
    # BLIS haswell's shape
    "avx2_6x16",
    # BLIS cortex-a57's shape, by-element FMA (BLIS armv8a)
    "neon_8x12",
    # 2 vectors wide at whatever VL (128..2048 bits)
    "sve_8x2v",
    # the portable fallback
    "scalar_4x4",
    # typed tiles (microkernel.dtypes): bf16 and fp16 widened to fp32 while packing, on
    # the fp32 micro-kernel of the ISA's default shape
    "avx512_bf16_8x32_u4", "avx512_f16_8x32_u4",
    "avx2_bf16_4x24_u8", "avx2_f16_4x24_u8",
    # integers widened to int16 pairs, vpmaddwd (x86.py); avx2: 4x16, since 4x24 needs 17
    # ymm with vpmaddwd's product (docs/design-notes.md, Integer tiles)
    "avx512_s8s8_8x32", "avx512_u8s8_8x32", "avx512_u8u8_8x32",
    "avx2_s8s8_4x16", "avx2_u8s8_4x16", "avx2_u8u8_4x16",
    # every type in portable C
    "scalar_bf16_4x4", "scalar_f16_4x4", "scalar_s8s8_4x4", "scalar_u8s8_4x4",
    "scalar_u8u8_4x4",
    # -- Arm typed tiles (issue 22; codegen/arm_typed.py, arm_mmla.py, sme.py)
    # SDOT/UDOT/SUDOT by element, the shape of neon_8x12: 24 int32 accumulators, 3 B and 2 A
    # vectors of 4 x 4 int8 (29 of 32 registers)
    "neondot_s8s8_8x12", "neondot_u8u8_8x12", "neondot_u8s8_8x12",
    # SMMLA/USMMLA/UMMLA: 16 accumulators of 2x2 int32, 4 B vectors and one A row pair
    "neoni8mm_s8s8_8x8", "neoni8mm_u8s8_8x8", "neoni8mm_u8u8_8x8",
    # BFMMLA, the same 2x2 blocks in fp32
    "neonbf16_8x8",
    # fp16 FMLA by element into 24 fp16 accumulators of 8 lanes; FMLAL/FMLAL2 into 16 fp32
    "neonfp16_8x24", "neonfp16_f16_8x8",
    # SVE SMMLA/BFMMLA at any VL: NR = 2 x VL/32, 16 accumulators, A row pairs
    # replicated per 128-bit segment (ld1rq)
    "svei8mm_s8s8_8x2v", "svei8mm_u8s8_8x2v", "svei8mm_u8u8_8x2v", "svebf16_8x2v",
    # SME outer products into the four 32-bit ZA tiles: 2 x SVL/32 square at any SVL. The
    # integer ones (sme_s8s8_2x2v, ...: SMOPA) are generated but not built in: qemu 7.2's
    # 32-bit SMOPA is wrong (microkernel.cross.run.SMOPA_DEFECT), so they are unproven here
    "sme_2x2v", "sme_bf16_2x2v", "sme_f16_2x2v",
    # the x86 instructions of these types (codegen/x86_typed.py, codegen/amx.py):
    # AMX tdpbf16ps / tdpbssd / tdpbusd / tdpbuud on 2 x 2 C tiles (8 of 8 tile registers)
    "amx_bf16_32x32", "amx_s8s8_32x32", "amx_u8s8_32x32", "amx_u8u8_32x32",
    # AVX512-BF16 vdpbf16ps, 16 accumulators as avx512_8x32
    "avx512bf16_8x32",
    # AVX512-FP16 vfmadd231ph, fp16 accumulation: 8 rows x 2 vectors of 32 fp16 lanes
    "avx512fp16_8x64",
    # AVX512-VNNI vpdpbusd, u8 x s8 quads; s8s8 and u8u8 with A shifted by 128 and B's
    # column sums subtracted (x86_typed.py)
    "avx512vnni_u8s8_8x32", "avx512vnni_s8s8_8x32", "avx512vnni_u8u8_8x32",
))

#: gemm()'s kernel for typed inputs: the first of each list whose ISA this CPU and OS
#: run (microkernel.gemm_typed.default_kernel); the portable ones last
#: On Arm: SVE before NEON (the same instruction at VL >= 128 bits), the matrix
#: instructions before the dot products; SME last (no SME hardware measured here, and every
#: micro-kernel call enters and leaves streaming mode): name an sme tile to use it. No SME
#: integer tile: none is built in (see BUILTIN).
TYPED_DEFAULTS: dict[str, tuple[str, ...]] = {
    "bf16": ("amx_bf16_32x32", "avx512bf16_8x32", "avx512_bf16_8x32_u4", "avx2_bf16_4x24_u8",
             "svebf16_8x2v", "neonbf16_8x8", "sme_bf16_2x2v", "scalar_bf16_4x4"),
    "f16": ("avx512_f16_8x32_u4", "avx2_f16_4x24_u8",
            "neonfp16_f16_8x8", "sme_f16_2x2v", "scalar_f16_4x4"),
    "s8s8": ("amx_s8s8_32x32", "avx512vnni_s8s8_8x32", "avx512_s8s8_8x32", "avx2_s8s8_4x16",
             "svei8mm_s8s8_8x2v", "neoni8mm_s8s8_8x8", "neondot_s8s8_8x12",
             "scalar_s8s8_4x4"),
    "u8s8": ("amx_u8s8_32x32", "avx512vnni_u8s8_8x32", "avx512_u8s8_8x32", "avx2_u8s8_4x16",
             "svei8mm_u8s8_8x2v", "neoni8mm_u8s8_8x8", "neondot_u8s8_8x12",
             "scalar_u8s8_4x4"),
    "u8u8": ("amx_u8u8_32x32", "avx512vnni_u8u8_8x32", "avx512_u8u8_8x32", "avx2_u8u8_4x16",
             "svei8mm_u8u8_8x2v", "neoni8mm_u8u8_8x8", "neondot_u8u8_8x12",
             "scalar_u8u8_4x4"),
}

#: gemm()'s default tile per ISA (stated here, not implied by order)
DEFAULTS: dict[str, str] = {
    "avx512": "avx512_8x32_u4",
    "avx2": "avx2_4x24_u8",
    "neon": "neon_8x12",
    "sve": "sve_8x2v",
    "scalar": "scalar_4x4",
    # the Arm typed ISAs: their first built-in
    "neondot": "neondot_s8s8_8x12",
    "neoni8mm": "neoni8mm_s8s8_8x8",
    "neonbf16": "neonbf16_8x8",
    "neonfp16": "neonfp16_8x24",
    "svei8mm": "svei8mm_s8s8_8x2v",
    "svebf16": "svebf16_8x2v",
    "sme": "sme_2x2v",
    # the typed x86 ISAs: the tile of their first types (the sweep and bench take the
    # default of other types from TYPED_DEFAULTS)
    "avx512bf16": "avx512bf16_8x32",
    "avx512fp16": "avx512fp16_8x64",
    "avx512vnni": "avx512vnni_u8s8_8x32",
    "amx": "amx_bf16_32x32",
}

#: User-shaped tiles the C harnesses stress beside the built-ins: odd MR, NR of 1 to 3
#: vectors (5 or 7 lanes for scalar), k-unrolls 2 to 4 (remainder loops in the K loop).
STRESS: tuple[TileSpec, ...] = tuple(TileSpec.from_name(n) for n in (
    "avx2_5x16_u4", "avx2_3x24_u3", "scalar_3x5_u4", "scalar_2x7_u2",
))

#: Square sizes of the benchmark suites (bench/test_bench_tiles.py)
BENCH_SQUARES: tuple[int, ...] = (256, 512, 1024, 2048)

#: The new x86 typed tiles and the variants the device script validates, times in L1
#: and races on the lent Sapphire Rapids host (``bash bench/device_cpu.sh types``)
DEVICE_TYPED: tuple[TileSpec, ...] = tuple(TileSpec.from_name(n) for n in (
    "amx_bf16_32x32", "amx_s8s8_32x32", "amx_u8s8_32x32", "amx_u8u8_32x32",
    "amx_bf16_16x32", "amx_bf16_32x16", "avx512bf16_8x32", "avx512bf16_8x32_u4",
    "avx512fp16_8x64", "avx512fp16_8x64_u4", "avx512vnni_u8s8_8x32",
    "avx512vnni_s8s8_8x32", "avx512vnni_u8u8_8x32",
))

#: AVX-512 tiles raced on the lent Sapphire Rapids host (bench/device_cpu.sh)
DEVICE_AVX512: tuple[TileSpec, ...] = tuple(TileSpec.from_name(n) for n in (
    "avx512_8x32_u4", "avx512_8x16", "avx512_6x32", "avx512_12x32", "avx512_6x64",
))


def builtin(isa: str | None = None, arch: str | None = None,
            types: str | None = None) -> tuple[TileSpec, ...]:
    """Built-in tiles, optionally of one ISA, one architecture (``x86_64``,
    ``aarch64``; ``any`` ISAs such as scalar belong to every architecture) or one set
    of input types (``f32``, ``bf16``, ...)."""
    return tuple(s for s in BUILTIN if (isa is None or s.isa == isa)
                 and (arch is None or s.info.arch in (arch, "any"))
                 and (types is None or s.types == types))


@functools.lru_cache(maxsize=None)
def spec(name: str) -> TileSpec:
    """``TileSpec.from_name(name)``, cached."""
    return TileSpec.from_name(name)


def default(isa: str) -> TileSpec:
    """gemm()'s default tile for ``isa``. Raises KeyError naming the known ISAs."""
    if isa not in DEFAULTS:
        raise KeyError(f"no default tile for ISA {isa!r}; ISAs: {', '.join(ISAS)}")
    return TileSpec.from_name(DEFAULTS[isa])


def typed_default(isa: str, types: str) -> TileSpec | None:
    """The default tile of ``isa`` for input ``types``: the entry of
    :data:`TYPED_DEFAULTS` (``DEFAULTS`` for fp32) of that ISA, else the first
    built-in of both, else None."""
    if types == "f32":
        return default(isa) if ISAS[isa].implied == "f32" else None
    for name in TYPED_DEFAULTS.get(types, ()):
        if spec(name).isa == isa:
            return spec(name)
    return next((s for s in BUILTIN if s.isa == isa and s.types == types), None)


def names(isa: str | None = None, types: str | None = None) -> list[str]:
    return [s.name for s in builtin(isa, types=types)]


def stress(isas=None, types: str | None = "f32") -> tuple[TileSpec, ...]:
    """Built-ins plus the stress tiles, of ``isas`` (default all) and ``types``
    (default fp32, what the C harnesses' one driver build takes; None: all)."""
    return tuple(s for s in BUILTIN + STRESS if (isas is None or s.isa in isas)
                 and (types is None or s.types == types))


def is_builtin(spec: TileSpec) -> bool:
    return spec in BUILTIN


def _check() -> None:
    for isa, name in DEFAULTS.items():
        spec = TileSpec.from_name(name)
        if spec not in BUILTIN or spec.isa != isa:
            raise AssertionError(f"registry: default {name} of {isa} is not a built-in {isa} tile")
    for types, names_ in TYPED_DEFAULTS.items():
        for name in names_:
            spec_ = TileSpec.from_name(name)
            if spec_ not in BUILTIN or spec_.types != types:
                raise AssertionError(f"registry: {name} in TYPED_DEFAULTS[{types!r}] is not a "
                                     f"built-in {types} tile")
        if TileSpec.from_name(names_[-1]).isa != "scalar":
            raise AssertionError(f"registry: TYPED_DEFAULTS[{types!r}] must end with a scalar tile")
    missing = set(ISAS) - set(DEFAULTS)
    if missing:
        raise AssertionError(f"registry: no default tile for {', '.join(sorted(missing))}")


_check()
