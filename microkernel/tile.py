"""Register-tile specs: the single source of truth for every mirror of a tile.

A :class:`TileSpec` names an ISA and a register tile of C (MR rows x NR columns,
fp32). Its name *is* its metadata (``avx512_8x16``, ``avx2_6x16``, ``scalar_4x4``,
``neon_8x12``, ``sve_8x2v``). From one spec come the generated C micro-kernel
(:mod:`microkernel.codegen`), the numpy reference tile loop
(:func:`reference_ukernel`), the numba CUDA kernel (:mod:`microkernel.gpu`) and the
register budget (:func:`register_budget`).

For SVE the width is counted in vectors: ``sve_8x2v`` is MR = 8 and NR = 2 * VL
lanes, with VL read at run time (``svcntw()``), so one binary runs at every vector
length.
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
    # AVX512-VNNI vpdpbusd: u8 x s8 quads along K into int32 lanes (SDM vol. 2C, VPDPBUSD)
    "avx512vnni": IsaInfo("avx512vnni", "x86_64", 16, 32, 5, 2,
                          _AVX512_FLAGS + ("-mavx512vnni",), types=("u8s8",), implied=None),
    # AMX: 8 tile registers of 16 rows x 64 bytes (tmm0-7); a C tile is 16 x 16 fp32 or
    # int32, ``vector_registers`` counts tile registers (register_budget below).
    # fma_latency / fma_units are in units of one TMUL issue: tdp* issue once per 16
    # cycles and their result is ready after ~4 issues (the issue 21 measurement: four
    # independent tdpbf16ps reach the peak), so 4 C tiles hide the latency.
    "amx": IsaInfo("amx", "x86_64", 16, 8, 4, 1,
                   _AVX512_FLAGS + ("-mamx-tile", "-mamx-bf16", "-mamx-int8"),
                   types=("bf16",) + _INT_TYPES, implied=None),
}

#: rows of one AMX tile register (palette 1: 16 rows x 64 bytes; Intel SDM vol. 1, 18.2)
AMX_TILE_ROWS = 16

DEFAULT_K_UNROLL = 1  # u2/u4 made GCC 12 -O3 spill near-full tiles (microkernel asm; see docs)

#: the types field of a name (microkernel.dtypes.TYPES, f32 aside: it is never written)
_TYPES_RE = "bf16|f16h|f16|s8s8|u8s8|u8u8"
_NAME_RE = re.compile(rf"^(?P<isa>[a-z0-9]+)(?:_(?P<types>{_TYPES_RE}))?_(?P<mr>\d+)x(?P<nr>\d+)"
                      r"(?P<v>v?)(?:_u(?P<ku>\d+))?$")


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
        Copies of the k-step body in the inner loop (default 1: with 2 or 4, GCC 12 -O3
        spilled near-full tiles such as avx2_6x16 to the stack; `microkernel asm` shows it).
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
                f"{budget.broadcasts} broadcast) but {self.isa} has {budget.available}; "
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
    def from_name(cls, name: str) -> "TileSpec":
        """Parse a tile name such as ``avx512_12x32`` or ``sve_8x2v``.

        Raises :class:`TileError` naming what is wrong.
        """
        m = _NAME_RE.match(name)
        if not m:
            raise TileError(
                f"bad tile name {name!r}: expected <isa>[_<types>]_<MR>x<NR>[_u<K>] (e.g. "
                f"avx512_8x16, avx2_bf16_4x24, scalar_s8s8_4x4) or sve_<MR>x<N>v; ISAs: "
                f"{', '.join(ISAS)}; types: {_TYPES_RE.replace('|', ', ')} (f32 is never "
                f"written); docs/naming.md")
        isa = m["isa"]
        if isa not in ISAS:
            raise TileError(f"unknown ISA {isa!r} in {name!r}; valid ISAs: {', '.join(ISAS)}")
        if (isa == "sve") != bool(m["v"]):
            raise TileError(f"{name!r}: only sve tiles count NR in vectors ('v' suffix), "
                            f"e.g. sve_8x2v")
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

    ``needed = accumulators + b_vectors + broadcasts`` where accumulators =
    MR * NR / lanes, b_vectors = NR / lanes (one B row per k step) and one register
    for the broadcast A value. This is the register-bound form LIBXSMM checks
    before generating a kernel. ``min_accumulators = fma_latency * fma_units`` is the
    latency bound MR*NR >= lanes * L_fma * N_fma of Low, Igual, Smith and
    Quintana-Orti, "Analytical Modeling Is Enough for High-Performance BLIS",
    ACM TOMS 43(2), 2016.
    """
    accumulators: int
    b_vectors: int
    broadcasts: int
    available: int
    min_accumulators: int

    @property
    def needed(self) -> int:
        return self.accumulators + self.b_vectors + self.broadcasts

    @property
    def hides_fma_latency(self) -> bool:
        return self.accumulators >= self.min_accumulators

    @property
    def near_limit(self) -> bool:
        return self.available - 1 <= self.needed <= self.available


def register_budget(spec: TileSpec) -> RegisterBudget:
    """Register budget of ``spec`` (counts of vector registers; see RegisterBudget).

    AMX counts tile registers instead: ``accumulators`` the C tiles (ceil(MR/16) x
    NR/16, each up to 16 rows x 16 fp32/int32 columns), ``broadcasts`` the A tiles (one
    per row of C tiles: MR rows x 64 bytes of K), ``b_vectors`` the B tiles (one per
    column of C tiles: 64 bytes of K in pairs or quads x 16 columns); all of them live
    at once in the K loop, so C + A + B <= 8 (tmm0-7; Intel SDM vol. 1, 18.2, palette
    1). amx_bf16_32x32: 2 x 2 C + 2 A + 2 B = 8. ``min_accumulators`` is 4 C tiles
    (IsaInfo("amx"): latency in TMUL issues)."""
    info = spec.info
    vpr = spec.vectors_per_row
    if spec.isa == "amx":
        row_tiles = -(-spec.mr // AMX_TILE_ROWS)
        return RegisterBudget(accumulators=row_tiles * vpr, b_vectors=vpr,
                              broadcasts=row_tiles, available=info.vector_registers,
                              min_accumulators=info.fma_latency * info.fma_units)
    return RegisterBudget(
        accumulators=spec.mr * vpr,
        b_vectors=vpr,
        broadcasts=1,
        available=info.vector_registers,
        min_accumulators=info.fma_latency * info.fma_units,
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
