"""Register-tile specs: the single source of truth for every mirror of a tile.

A :class:`TileSpec` names an ISA and a register tile of C (MR rows x NR columns,
fp32). Its name *is* its metadata (``avx512_8x16``, ``avx2_6x16``, ``scalar_4x4``,
``neon_8x12``, ``sve_8x2v``). From one spec come the generated C micro-kernel
(:mod:`microkernel.codegen`), the numpy reference tile loop
(:func:`reference_ukernel`), the numba CUDA kernel (:mod:`microkernel.gpu`) and the
register budget (:func:`register_budget`).

For SVE the width is counted in vectors: ``sve_8x2v`` is MR = 8 and NR = 2 * VL
lanes, with VL read at run time (``svcntw()``), so one binary runs at every vector
length. For SME both counts are in vectors of the streaming VL: ``sme_2x2v`` is
2 x SVL/32 rows by 2 x SVL/32 columns, four ZA tiles (docs/naming.md).

The Arm typed ISAs (``neondot``, ``neoni8mm``, ``neonbf16``, ``neonfp16``, ``svei8mm``,
``svebf16``, ``sme``) say which instruction form their tiles are made of
(:attr:`IsaInfo.form`): the register budget and the panel layout follow from it
(:func:`register_budget`; :mod:`microkernel.codegen.arm_typed`,
:mod:`microkernel.codegen.arm_mmla`, :mod:`microkernel.codegen.sme`).
"""
from __future__ import annotations

import dataclasses
import re
import warnings

__all__ = [
    "IsaInfo", "ISAS", "TileSpec", "RegisterBudget", "register_budget",
    "TileError", "reference_ukernel", "pack_a", "pack_b",
]


class TileError(ValueError):
    """A tile spec that is malformed or cannot fit the ISA's register file."""


@dataclasses.dataclass(frozen=True)
class IsaInfo:
    """What the generator and the register model need to know about one ISA.

    ``lanes`` is fp32 lanes per vector register (None: vector-length agnostic, SVE).
    ``fma_latency`` (cycles) and ``fma_units`` (FMA pipes per core) feed the
    latency bound of Low et al. 2016; they are typical values for the ISA's
    mainstream cores (Intel optimization manual, Arm software optimization guides)
    and can be refined by the probe.
    """
    name: str
    arch: str               # "x86_64", "aarch64" or "any"
    lanes: int | None
    vector_registers: int
    fma_latency: int
    fma_units: int
    cflags: tuple[str, ...]  # compiler flags for this ISA's module only
    #: input types (microkernel.dtypes) this ISA's tiles may take; an fp32 FMA ISA takes
    #: bf16 and fp16 by widening them to fp32 while packing
    types: tuple[str, ...] = ("f32", "bf16", "f16")
    #: the types a tile name without a types field means (None: the name must say)
    implied: str | None = "f32"
    #: the multiply-add form a tile is made of, per 128-bit register (segment):
    #: ``fma`` a broadcast (or by-element) FMA into one row; ``dot`` a K group of 32
    #: bits per lane into one row (SDOT/UDOT); ``mmla`` a 2 x 64-bit-of-K by 64-bit-of-K
    #: x 2 block into a 2 x 2 block (SMMLA, BFMMLA: Arm ARM, "SMMLA", "BFMMLA"); ``fma16``
    #: fp16 FMLA / the widening FMLAL; ``mopa`` SME outer products into ZA tiles
    form: str = "fma"
    #: per input types, what a tile of them needs beyond the ISA: (types, the probe's
    #: feature flag (CpuInfo.features), extra compiler flags appended to ``cflags``)
    needs: tuple = ()

    @property
    def general(self) -> bool:
        """True for the ISAs gemm() may pick for fp32 by itself (tiles fp32 without
        saying so, not SME: its streaming-mode switches per micro-kernel call are not
        measured here; name an sme tile, or MICROKERNEL_ISA=sme, to use it)."""
        return self.implied == "f32" and self.form != "mopa"

    def need(self, types: str) -> tuple[str | None, tuple[str, ...]]:
        """(probe feature, extra cflags) that a tile of ``types`` needs beyond the ISA
        (None, ()) when it needs nothing more."""
        for t, feature, flags in self.needs:
            if t == types:
                return feature, tuple(flags)
        return None, ()


_INT_TYPES = ("s8s8", "u8s8", "u8u8")
#: the AVX-512 base flags every x86 typed ISA's module gets besides its own
_AVX512_FLAGS = ("-mavx512f", "-mavx512vl", "-mavx512dq", "-mavx512bw", "-mavx2", "-mfma")

ISAS: dict[str, IsaInfo] = {
    "scalar": IsaInfo("scalar", "any", 1, 16, 4, 2, (),
                      types=("f32", "bf16", "f16") + _INT_TYPES),
    "avx2": IsaInfo("avx2", "x86_64", 8, 16, 4, 2, ("-mavx2", "-mfma"),
                    types=("f32", "bf16", "f16") + _INT_TYPES),
    "avx512": IsaInfo("avx512", "x86_64", 16, 32, 4, 2, _AVX512_FLAGS,
                      types=("f32", "bf16", "f16") + _INT_TYPES),
    "neon": IsaInfo("neon", "aarch64", 4, 32, 4, 2, ("-march=armv8-a",), types=("f32",)),
    "sve": IsaInfo("sve", "aarch64", None, 32, 4, 2, ("-march=armv8.2-a+sve",), types=("f32",)),
    # -- Arm typed ISAs (issue 22). The probe clears each from its hwcap bit (c_src/probe.c,
    # mk_probe_decode_arm2; Linux Documentation/arch/arm64/elf_hwcaps.rst). Latency and
    # pipes are assumed equal to the fp32 FMLA's (4 cycles, 2 pipes), not taken from a
    # vendor table: they only set the latency bound's accumulator count.
    # SDOT/UDOT (FEAT_DotProd) by element; u8s8 is SUDOT, part of FEAT_I8MM
    "neondot": IsaInfo("neondot", "aarch64", 4, 32, 4, 2, ("-march=armv8.2-a+dotprod",),
                       types=("s8s8", "u8u8", "u8s8"), implied=None, form="dot",
                       needs=(("u8s8", "i8mm", ("-march=armv8.2-a+dotprod+i8mm",)),)),
    # SMMLA/UMMLA/USMMLA (FEAT_I8MM): 2x8 by 8x2 int8 -> 2x2 int32 per register
    "neoni8mm": IsaInfo("neoni8mm", "aarch64", 4, 32, 4, 2, ("-march=armv8.2-a+i8mm",),
                        types=_INT_TYPES, implied=None, form="mmla"),
    # BFMMLA (FEAT_BF16): 2x4 by 4x2 bf16 -> 2x2 fp32 per register
    "neonbf16": IsaInfo("neonbf16", "aarch64", 4, 32, 4, 2, ("-march=armv8.2-a+bf16",),
                        types=("bf16",), implied="bf16", form="mmla"),
    # fp16 FMLA (FEAT_FP16, 8 lanes, fp16 accumulate); f16: FMLAL/FMLAL2 (FEAT_FHM) to fp32
    "neonfp16": IsaInfo("neonfp16", "aarch64", 8, 32, 4, 2, ("-march=armv8.2-a+fp16",),
                        types=("f16h", "f16"), implied="f16h", form="fma16",
                        needs=(("f16", "asimdfhm", ("-march=armv8.2-a+fp16+fp16fml",)),)),
    # SVE SMMLA/UMMLA/USMMLA (FEAT_I8MM with SVE) and BFMMLA (FEAT_BF16 with SVE), per
    # 128-bit segment, vector length agnostic like sve
    "svei8mm": IsaInfo("svei8mm", "aarch64", None, 32, 4, 2, ("-march=armv8.2-a+sve+i8mm",),
                       types=_INT_TYPES, implied=None, form="mmla"),
    "svebf16": IsaInfo("svebf16", "aarch64", None, 32, 4, 2, ("-march=armv8.2-a+sve+bf16",),
                       types=("bf16",), implied="bf16", form="mmla"),
    # SME (FEAT_SME, never SME2): FMOPA / BFMOPA / FMOPA (widening) / SMOPA-family into the
    # four 32-bit ZA tiles, streaming-VL agnostic. The C code is baseline (Apple's M4 has
    # SME without SVE); the streaming body is inline assembly (.arch_extension sme: GCC 12
    # has no SME option, binutils 2.40 assembles it). Every type needs its ZA bit
    # (HWCAP2_SME_*), fp32 is in usable_sme itself.
    "sme": IsaInfo("sme", "aarch64", None, 32, 4, 2, ("-march=armv8-a",),
                   types=("f32", "bf16", "f16") + _INT_TYPES, form="mopa",
                   needs=(("bf16", "sme_b16f32", ()), ("f16", "sme_f16f32", ()),
                          ("s8s8", "sme_i8i32", ()), ("u8s8", "sme_i8i32", ()),
                          ("u8u8", "sme_i8i32", ()))),
    # -- x86 typed ISAs (microkernel.codegen.x86_typed, .amx): each serves its own types
    # only; ``lanes`` counts C columns per vector (fp32 or int32: 16 per zmm; the fp16
    # accumulators of avx512fp16: 32), for amx the 16 fp32/int32 columns of a C tile.
    # AVX512-BF16 vdpbf16ps: bf16 pairs along K, fp32 accumulation (Intel SDM vol. 2C,
    # VDPBF16PS); 4-cycle latency on two ports as the fp32 FMA (Intel optimization manual)
    "avx512bf16": IsaInfo("avx512bf16", "x86_64", 16, 32, 4, 2,
                          _AVX512_FLAGS + ("-mavx512bf16",), types=("bf16",), implied="bf16"),
    # AVX512-FP16 vfmadd231ph: 32 fp16 lanes, fp16 accumulation (SDM vol. 2C, VFMADD*PH)
    "avx512fp16": IsaInfo("avx512fp16", "x86_64", 32, 32, 4, 2,
                          _AVX512_FLAGS + ("-mavx512fp16",), types=("f16h",), implied="f16h"),
    # AVX512-VNNI vpdpbusd: u8 x s8 quads along K into int32 lanes (SDM vol. 2C, VPDPBUSD);
    # s8s8 and u8u8 through it with A shifted by 128 and B's column sums subtracted
    # (codegen/x86_typed.py)
    "avx512vnni": IsaInfo("avx512vnni", "x86_64", 16, 32, 5, 2,
                          _AVX512_FLAGS + ("-mavx512vnni",), types=("u8s8", "s8s8", "u8u8"),
                          implied=None),
    # AMX: 8 tile registers of 16 rows x 64 bytes (tmm0-7); a C tile is 16 x 16 fp32 or
    # int32, ``vector_registers`` counts tile registers (register_budget below).
    # fma_latency / fma_units are in units of one TMUL issue: tdp* issue once per 16
    # cycles and their result is ready after ~4 issues (the issue 21 measurement: four
    # independent tdpbf16ps reach the peak), so 4 C tiles hide the latency.
    "amx": IsaInfo("amx", "x86_64", 16, 8, 4, 1,
                   _AVX512_FLAGS + ("-mamx-tile", "-mamx-bf16", "-mamx-int8"),
                   types=("bf16",) + _INT_TYPES, implied=None),
}

#: ZA holds four 32-bit tiles (Arm ARM, "ZA array"): an sme tile of MR x NR vectors uses
#: MR * NR of them
SME_ZA_TILES = 4

#: rows of one AMX tile register (palette 1: 16 rows x 64 bytes; Intel SDM vol. 1, 18.2)
AMX_TILE_ROWS = 16

DEFAULT_K_UNROLL = 1  # u2/u4 made GCC 12 -O3 spill near-full tiles (microkernel asm; see docs)
#: the deepest unroll a tile may ask for: u64 of a 8x16 AVX-512 tile compiles in a few
#: seconds, u1000 took 20 s and u4096 over a minute in GCC 12 (session 48)
MAX_K_UNROLL = 64

#: the types field of a name (microkernel.dtypes.TYPES, f32 aside: it is never written)
_TYPES_RE = "bf16|f16h|f16|s8s8|u8s8|u8u8"
_NAME_RE = re.compile(rf"^(?P<isa>[a-z0-9]+)(?:_(?P<types>{_TYPES_RE}))?_(?P<mr>\d+)x(?P<nr>\d+)"
                      r"(?P<v>v?)(?:_u(?P<ku>\d+))?", re.ASCII)


@dataclasses.dataclass(frozen=True)
class TileSpec:
    """One register tile for one ISA and one set of input types.

    Parameters
    ----------
    isa : str
        A key of :data:`ISAS` (``scalar``, ``avx2``, ``avx512``, ``neon``, ``sve``, the
        x86 typed ``avx512bf16``, ``avx512fp16``, ``avx512vnni``, ``amx``).
    mr : int
        Rows of the C register tile (A values broadcast per k step); for ``amx`` at
        most 16 or a multiple of 16 (rows of C tiles).
    nr : int
        Columns of the C register tile, in lanes of C (fp32 or int32; avx512fp16: its
        fp16 accumulator lanes); for ``sve`` it counts *vectors* (NR = nr * VL/32 lanes
        at run time).
    k_unroll : int
        Copies of the k-step body in the inner loop, 1..MAX_K_UNROLL (default 1: with 2
        or 4, GCC 12 -O3 spilled near-full tiles such as avx2_6x16 to the stack;
        `microkernel asm` shows it).
    types : str
        Input types (a key of :data:`microkernel.dtypes.TYPES`: ``f32``, ``bf16``,
        ``f16``, ``f16h``, ``s8s8``, ``u8s8``, ``u8u8``); default: the ISA's implied
        types (``f32`` for the fp32 FMA ISAs). The accumulator and C types follow
        from it (:mod:`microkernel.dtypes`).

    Raises
    ------
    TileError
        Unknown ISA, types the ISA does not take, non-positive sizes, NR not a
        multiple of the ISA's lanes, or a tile whose accumulators cannot fit the
        register file.
    """
    isa: str
    mr: int
    nr: int
    k_unroll: int = DEFAULT_K_UNROLL
    types: str | None = None

    def __post_init__(self):
        if self.isa not in ISAS:
            raise TileError(f"unknown ISA {self.isa!r}; valid ISAs: {', '.join(ISAS)}")
        info = ISAS[self.isa]
        if self.types is None:
            if info.implied is None:
                raise TileError(f"{self.isa} tiles name their input types "
                                f"({', '.join(info.types)}), e.g. {self.isa}_{info.types[0]}_"
                                f"{self.mr}x{self.nr}")
            object.__setattr__(self, "types", info.implied)
        if self.types not in info.types:
            raise TileError(f"{self.isa} tiles take the input types {', '.join(info.types)}, "
                            f"not {self.types!r}")
        for field in ("mr", "nr", "k_unroll"):
            v = getattr(self, field)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TileError(f"{field} must be a positive integer, got {v!r}")
        lanes = self.info.lanes
        if lanes is not None and self.nr % lanes:
            raise TileError(
                f"{self.isa} tile NR={self.nr} is not a multiple of its {lanes} "
                f"{'fp32' if self.info.implied == 'f32' else 'C'} lanes")
        if self.mr > 64 or self.vectors_per_row > 64:
            raise TileError(f"tile {self.mr}x{self.nr} is beyond any register file")
        if self.k_unroll > MAX_K_UNROLL:
            raise TileError(f"k_unroll must be at most {MAX_K_UNROLL} (each copy of the k "
                            f"step is compiled: u{self.k_unroll} would keep the C compiler "
                            f"busy for minutes), got {self.k_unroll}")
        form = self.info.form
        if form == "mmla" and self.mr % 2:
            raise TileError(f"{self.isa} tiles take rows in pairs (a matrix multiply-"
                            f"accumulate makes a 2x2 block per 128 bits): MR={self.mr} is odd")
        if form == "mopa" and self.mr * self.nr > SME_ZA_TILES:
            raise TileError(f"{self.isa} tile {self.mr}x{self.nr}v needs {self.mr * self.nr} "
                            f"32-bit ZA tiles; ZA has {SME_ZA_TILES} (e.g. sme_2x2v, sme_1x4v)")
        if self.isa == "amx" and self.mr > AMX_TILE_ROWS and self.mr % AMX_TILE_ROWS:
            raise TileError(f"{self.name}: an AMX tile's MR is at most {AMX_TILE_ROWS} (one "
                            f"row of tiles of MR rows) or a multiple of {AMX_TILE_ROWS}")
        budget = register_budget(self)
        # Scalar tiles are never refused: they are the portable fallback, and their
        # operands can come from memory; `microkernel asm` shows what the compiler did.
        if budget.needed > budget.available and self.isa == "amx":
            raise TileError(
                f"{self.name} needs {budget.needed} tile registers ({budget.accumulators} C "
                f"tiles + {budget.broadcasts} A tiles + {budget.b_vectors} B tiles) but AMX "
                f"has {budget.available} (tmm0-7)")
        if budget.needed > budget.available and self.isa != "scalar":
            raise TileError(
                f"{self.name} needs {budget.needed} vector registers "
                f"({budget.accumulators} accumulators + {budget.b_vectors} B vectors + "
                f"{budget.broadcasts} broadcast"
                + (f" + {budget.temporaries} for the instruction form" if budget.temporaries
                   else "") + f") but {self.isa} has {budget.available}; "
                f"the compiler would spill the register tile to the stack")

    # -- names ------------------------------------------------------------------
    @property
    def name(self) -> str:
        """``<isa>[_<types>]_<MR>x<NR>`` (``v`` suffix: NR in vectors), ``_u<k>`` if
        unroll != 1; the types field only when the ISA does not imply them
        (docs/naming.md)."""
        suffix = "v" if self.is_vla else ""
        unroll = "" if self.k_unroll == DEFAULT_K_UNROLL else f"_u{self.k_unroll}"
        types = "" if self.types == self.info.implied else f"_{self.types}"
        return f"{self.isa}{types}_{self.mr}x{self.nr}{suffix}{unroll}"

    @classmethod
    def of(cls, spec_or_name) -> "TileSpec":
        """``spec_or_name`` as a TileSpec: a TileSpec as it is, a name parsed by
        :meth:`from_name` (TileError when malformed); anything else is a TypeError."""
        if isinstance(spec_or_name, TileSpec):
            return spec_or_name
        if isinstance(spec_or_name, str):
            return cls.from_name(spec_or_name)
        raise TypeError(f"expected a TileSpec or a tile name, got {type(spec_or_name).__name__}")

    @classmethod
    def from_name(cls, name: str) -> "TileSpec":
        """Parse a tile name such as ``avx512_12x32`` or ``sve_8x2v``.

        Raises :class:`TileError` naming what is wrong.
        """
        m = _NAME_RE.fullmatch(name) if isinstance(name, str) else None
        if not m:
            raise TileError(
                f"bad tile name {name!r}: expected <isa>[_<types>]_<MR>x<NR>[_u<K>] (e.g. "
                f"avx512_8x16, avx2_bf16_4x24, scalar_s8s8_4x4) or sve_<MR>x<N>v; ISAs: "
                f"{', '.join(ISAS)}; types: {_TYPES_RE.replace('|', ', ')} (f32 is never "
                f"written); docs/naming.md")
        isa = m["isa"]
        if isa not in ISAS:
            raise TileError(f"unknown ISA {isa!r} in {name!r}; valid ISAs: {', '.join(ISAS)}")
        if (ISAS[isa].lanes is None) != bool(m["v"]):
            raise TileError(f"{name!r}: only vector-length-agnostic tiles (sve, svei8mm, "
                            f"svebf16, sme) count NR in vectors ('v' suffix), e.g. sve_8x2v")
        ku = int(m["ku"]) if m["ku"] else DEFAULT_K_UNROLL
        if m["types"] is not None and m["types"] == ISAS[isa].implied:
            raise TileError(f"{name!r}: {isa} tiles are {m['types']} without saying so; "
                            f"the name is {isa}_{m['mr']}x{m['nr']}{m['v'] or ''}"
                            + (f"_u{ku}" if ku != DEFAULT_K_UNROLL else ""))
        return cls(isa, int(m["mr"]), int(m["nr"]), k_unroll=ku, types=m["types"])

    def __str__(self) -> str:
        return self.name

    # -- derived facts ----------------------------------------------------------
    @property
    def info(self) -> IsaInfo:
        return ISAS[self.isa]

    @property
    def gemm_types(self):
        """The :class:`microkernel.dtypes.GemmTypes` of this tile."""
        from .dtypes import get
        return get(self.types)

    @property
    def is_vla(self) -> bool:
        """True for vector-length-agnostic tiles (SVE): NR depends on the run-time VL."""
        return self.info.lanes is None

    @property
    def cflags(self) -> tuple[str, ...]:
        """Compiler flags of this tile's code: the ISA's, then what its types need
        (:meth:`IsaInfo.need`; a later -march overrides an earlier one)."""
        return self.info.cflags + self.info.need(self.types)[1]

    @property
    def feature(self) -> str | None:
        """The probe feature (a key of ``CpuInfo.features``) a tile of these types needs
        beyond its ISA, or None (e.g. ``asimdfhm`` for neonfp16_f16, ``sme_i8i32``)."""
        return self.info.need(self.types)[0]

    @property
    def mr_is_vectors(self) -> bool:
        """True for SME tiles, whose MR also counts streaming vectors (SVL/32 rows each)."""
        return self.info.form == "mopa"

    def mr_at(self, vector_bits: int | None = None) -> int:
        """MR in rows (for SME, at the given streaming vector length in bits)."""
        return self.mr * self.lanes_at(vector_bits) if self.mr_is_vectors else self.mr

    @property
    def vectors_per_row(self) -> int:
        """Vector registers spanning one row of the tile (NR / lanes)."""
        return self.nr if self.is_vla else self.nr // self.info.lanes

    def lanes_at(self, vector_bits: int | None = None) -> int:
        """fp32 lanes per vector; SVE needs ``vector_bits`` (128..2048)."""
        if not self.is_vla:
            return self.info.lanes
        if vector_bits is None or vector_bits % 128 or not 128 <= vector_bits <= 2048:
            raise TileError(f"{self.name}: SVE needs a vector length in bits "
                            f"(multiple of 128, 128..2048), got {vector_bits!r}")
        return vector_bits // 32

    def nr_at(self, vector_bits: int | None = None) -> int:
        """NR in fp32 columns (for SVE, at the given vector length in bits)."""
        return self.vectors_per_row * self.lanes_at(vector_bits)

    @property
    def file_stem(self) -> str:
        """The generated source's file name without ``.c``: the name itself, so that
        the short name, the file and the C symbol (``mk_ukernel_<name>``) share one
        order (docs/naming.md)."""
        return self.name


@dataclasses.dataclass(frozen=True)
class RegisterBudget:
    """Vector registers a tile needs, and the Low et al. latency bound.

    ``needed = accumulators + b_vectors + broadcasts + temporaries`` where accumulators =
    MR * NR / lanes, b_vectors = NR / lanes (one B row per k step), one register
    for the broadcast A value, and the registers the instruction form needs beyond
    those (``temporaries``: the product of ``vpmaddwd``, which has no accumulating form
    without VNNI). This is the register-bound form LIBXSMM checks before generating a
    kernel. ``min_accumulators = fma_latency * fma_units`` is the
    latency bound MR*NR >= lanes * L_fma * N_fma of Low, Igual, Smith and
    Quintana-Orti, "Analytical Modeling Is Enough for High-Performance BLIS",
    ACM TOMS 43(2), 2016.
    """
    accumulators: int
    b_vectors: int
    broadcasts: int
    available: int
    min_accumulators: int
    temporaries: int = 0

    @property
    def needed(self) -> int:
        return self.accumulators + self.b_vectors + self.broadcasts + self.temporaries

    @property
    def hides_fma_latency(self) -> bool:
        return self.accumulators >= self.min_accumulators

    @property
    def near_limit(self) -> bool:
        return self.available - 1 <= self.needed <= self.available


def register_budget(spec: TileSpec) -> RegisterBudget:
    """Register budget of ``spec`` (counts of vector registers; see RegisterBudget).
    The Arm typed forms (:attr:`IsaInfo.form`) count per 128-bit register or segment:

    * ``dot`` (SDOT): MR x NR/4 int32 accumulators, NR/4 B vectors (4 columns x 4 k),
      ceil(MR/4) A vectors (4 rows x 4 k, a lane picked per row);
    * ``mmla`` (SMMLA, BFMMLA): an accumulator is a 2x2 block, so MR/2 x NR/2 of them
      (SVE: MR/2 x 2 nv vectors of VL/64 2x2 blocks); NR/2 B vectors (2 columns x 8 int8
      or 4 bf16 of K; SVE: 2 nv), one A row pair at a time (SVE: replicated per segment);
    * ``fma16``: fp16 accumulators of 8 lanes (f16h) or fp32 ones of 4 (FMLAL, f16),
      NR/8 B vectors of 8 fp16, one A vector of 8 fp16 values (lanes picked);
    * ``mopa`` (SME): ZA tiles hold the accumulators, MR + NR vectors of A and B per k
      step out of the 32 Z registers.

    AMX counts tile registers instead: ``accumulators`` the C tiles (ceil(MR/16) x
    NR/16, each up to 16 rows x 16 fp32/int32 columns), ``broadcasts`` the A tiles (one
    per row of C tiles: MR rows x 64 bytes of K), ``b_vectors`` the B tiles (one per
    column of C tiles: 64 bytes of K in pairs or quads x 16 columns); all of them live
    at once in the K loop, so C + A + B <= 8 (tmm0-7; Intel SDM vol. 1, 18.2, palette
    1). amx_bf16_32x32: 2 x 2 C + 2 A + 2 B = 8. ``min_accumulators`` is 4 C tiles
    (IsaInfo("amx"): latency in TMUL issues)."""
    info = spec.info
    vpr = spec.vectors_per_row
    form = info.form
    if form != "fma":
        lat = info.fma_latency * info.fma_units
        if form == "mopa":
            return RegisterBudget(spec.mr * spec.nr, spec.nr, spec.mr, info.vector_registers,
                                  min(lat, SME_ZA_TILES))
        if form == "dot":
            acc, bv, av = spec.mr * vpr, vpr, -(-spec.mr // 4)
        elif form == "mmla":
            acc = (spec.mr // 2) * (2 * vpr)
            bv, av = 2 * vpr, 1
        else:                                    # fma16
            wide = spec.types == "f16"           # FMLAL: fp32 accumulators, 4 lanes
            acc = spec.mr * vpr * (2 if wide else 1)
            bv, av = vpr, -(-spec.mr // 8)
        return RegisterBudget(acc, bv, av, info.vector_registers, lat)
    if spec.isa == "amx":
        row_tiles = -(-spec.mr // AMX_TILE_ROWS)
        return RegisterBudget(accumulators=row_tiles * vpr, b_vectors=vpr,
                              broadcasts=row_tiles, available=info.vector_registers,
                              min_accumulators=info.fma_latency * info.fma_units)
    integer = spec.types in _INT_TYPES
    if spec.isa in ("avx2", "avx512") and integer:
        temporaries = 1              # vpmaddwd's product, before vpaddd adds it
    else:
        temporaries = 0
    return RegisterBudget(
        accumulators=spec.mr * vpr,
        b_vectors=vpr,
        broadcasts=1,
        available=info.vector_registers,
        min_accumulators=info.fma_latency * info.fma_units,
        temporaries=temporaries,
    )


def check_budget(spec: TileSpec) -> RegisterBudget:
    """Budget of ``spec``, warning (RuntimeWarning) when it is near the limit or
    too small to hide FMA latency. Spec construction already refused overflows."""
    b = register_budget(spec)
    if b.near_limit:
        warnings.warn(f"{spec.name} uses {b.needed} of {b.available} vector registers: "
                      f"near the limit, check `microkernel asm {spec.name}` for spills",
                      RuntimeWarning, stacklevel=2)
    if not b.hides_fma_latency:
        warnings.warn(f"{spec.name} has {b.accumulators} accumulators, fewer than the "
                      f"{b.min_accumulators} (FMA latency x FMA units) needed to hide FMA "
                      f"latency (Low et al. 2016)", RuntimeWarning, stacklevel=2)
    return b


# -- the numpy mirror of the micro-kernel ------------------------------------------

def pack_a(a, mr: int):
    """Pack an (m, kc) block of A into MR-tall micro-panels.

    Returns a float32 array of shape (ceil(m/MR), kc, MR): panel p, step k holds
    A[p*MR:(p+1)*MR, k], zero-padded past m. This is the layout the C driver's
    packing writes and the micro-kernel reads (MR consecutive floats per k).
    """
    import numpy as np
    m, kc = a.shape
    panels = -(-m // mr)
    out = np.zeros((panels, kc, mr), dtype=np.float32)
    for p in range(panels):
        rows = a[p * mr:(p + 1) * mr, :]
        out[p, :, :rows.shape[0]] = rows.T
    return out


def pack_b(b, nr: int):
    """Pack a (kc, n) block of B into NR-wide micro-panels: shape (ceil(n/NR), kc, NR),
    zero-padded past n (NR consecutive floats per k)."""
    import numpy as np
    kc, n = b.shape
    panels = -(-n // nr)
    out = np.zeros((panels, kc, nr), dtype=np.float32)
    for p in range(panels):
        cols = b[:, p * nr:(p + 1) * nr]
        out[p, :, :cols.shape[1]] = cols
    return out


def reference_ukernel(spec: TileSpec, kc: int, alpha: float, a_panel, b_panel,
                      beta: float, c, *, vector_bits: int | None = None):
    """The micro-kernel's loop in numpy, in the C kernel's loop order (for teaching
    and tests): ``C := alpha * sum_k a_panel[k] (outer) b_panel[k] + beta * C``.

    a_panel: (kc, MR) float32; b_panel: (kc, NR) float32; c: (MR, NR) float32,
    updated in place and returned. Accumulation is in float32, one k step at a
    time: for each k, broadcast each of the MR values of A against the NR-lane row
    of B (one FMA per accumulator vector). beta == 0 never reads C.
    """
    import numpy as np
    mr, nr = spec.mr, spec.nr_at(vector_bits)
    acc = np.zeros((mr, nr), dtype=np.float32)
    for k in range(kc):
        b_row = b_panel[k]                      # load NR/lanes vectors of B
        for i in range(mr):                     # broadcast A[i, k] ...
            acc[i] += np.float32(a_panel[k, i]) * b_row   # ... and FMA into row i
    acc *= np.float32(alpha)
    if beta == 0:
        c[...] = acc
    else:
        c[...] = acc + np.float32(beta) * c
    return c
