"""What this CPU *and* its OS can run: ISAs, vector length, registers, caches.

:func:`probe` wraps the C probe in ``c_src/probe.c`` (compiled with baseline flags
only) and the Linux sysfs cache description. Sources:

- x86: Intel SDM vol. 2A, CPUID (leaves 1 and 7) and XGETBV; a feature counts only
  when the OS saves its register state: AVX/FMA/AVX2 need CPUID.1:ECX.OSXSAVE and
  (XCR0 & 0x6) == 0x6, AVX-512 also needs (XCR0 & 0xE6) == 0xE6 (Intel SDM vol. 1,
  13.3). Virtual machines can report AVX-512 in CPUID with ZMM state off.
- aarch64 Linux: Documentation/arch/arm64/elf_hwcaps.rst (AT_HWCAP bit 1 ASIMD,
  bit 22 SVE; AT_HWCAP2 bit 1 SVE2; the typed extensions: HWCAP_ASIMDHP bit 10,
  ASIMDDP 20, ASIMDFHM 23, HWCAP2_SVEI8MM 9, SVEBF16 12, I8MM 13, BF16 14, SME 23,
  SME_I8I32 26, SME_F16F32 27, SME_B16F32 28, SME_F32F32 29) and
  Documentation/arch/arm64/sve.rst, sme.rst (``prctl(PR_SVE_GET_VL) & 0xffff`` and
  ``prctl(PR_SME_GET_VL) & 0xffff`` = current vector lengths in bytes). A typed tile
  may need a feature beyond its ISA (:meth:`CpuInfo.supports_tile`).
- caches: Linux Documentation/ABI/testing/sysfs-devices-system-cpu
  (``/sys/devices/system/cpu/cpu0/cache/index*``).

The ISA names are the keys of :data:`microkernel.tile.ISAS`. Forcing an ISA with
``MICROKERNEL_ISA`` is handled by dispatch, not here; dispatch asks
:meth:`CpuInfo.supports`.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import pathlib
import platform
import sys
from typing import Any

from .tile import ISAS

__all__ = [
    "Cache", "CpuInfo", "ProbeError", "probe", "read_caches", "load_c_probe",
    "info_from_c", "format_table", "cli_probe",
]

SYSFS_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


class ProbeError(RuntimeError):
    """The C probe could not be built or loaded."""


# -- caches --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Cache:
    """One cache of cpu0, as Linux sysfs describes it.

    ``type`` is ``"Data"``, ``"Instruction"`` or ``"Unified"``; ``size_bytes`` and
    ``line_bytes`` are in bytes; ``ways``/``sets``/``line_bytes`` are None when sysfs
    does not give them (``ways`` 0 means fully associative on some kernels).
    """
    level: int
    type: str
    size_bytes: int
    ways: int | None
    sets: int | None
    line_bytes: int | None


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _parse_size(text: str) -> int:
    """``"32K"`` -> 32768 bytes, ``"1024K"``, ``"32M"``, ``"512"`` (bytes).

    Raises ValueError on anything else.
    """
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS and not t[-1:].isdigit() else ""
    num = t[: len(t) - len(unit)]
    if not num.isdigit():
        raise ValueError(f"bad cache size {text!r}")
    return int(num) * _SIZE_UNITS[unit]


def read_caches(root: str | os.PathLike = SYSFS_CACHE_DIR) -> tuple[Cache, ...]:
    """The caches of cpu0 from Linux sysfs, sorted by (level, type).

    Entries without a readable level, type or size (after trying ways*sets*line)
    are skipped; a missing ``root`` (not Linux, or no sysfs) gives ``()``. Never
    raises for missing or malformed files.
    """
    root = pathlib.Path(root)

    def read(d: pathlib.Path, name: str) -> str | None:
        try:
            return (d / name).read_text().strip()
        except OSError:
            return None

    def read_int(d: pathlib.Path, name: str) -> int | None:
        v = read(d, name)
        try:
            return int(v) if v is not None else None
        except ValueError:
            return None

    out = []
    try:
        dirs = sorted(root.glob("index*"))
    except OSError:
        return ()
    for d in dirs:
        level, ctype = read_int(d, "level"), read(d, "type")
        ways = read_int(d, "ways_of_associativity")
        sets = read_int(d, "number_of_sets")
        line = read_int(d, "coherency_line_size")
        size = None
        raw = read(d, "size")
        if raw:
            try:
                size = _parse_size(raw)
            except ValueError:
                size = None
        if size is None and ways and sets and line:
            size = ways * sets * line
        if level is None or not ctype or size is None:
            continue
        out.append(Cache(level, ctype, size, ways, sets, line))
    return tuple(sorted(out, key=lambda c: (c.level, c.type)))


# -- the CPU -------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CpuInfo:
    """What :func:`probe` found.

    Attributes
    ----------
    arch : str
        ``"x86_64"``, ``"aarch64"`` or ``platform.machine()`` for other machines.
    vendor, model_name : str
        x86: CPUID vendor ID (``"GenuineIntel"``, ``"AuthenticAMD"``) and brand
        string; aarch64: MIDR_EL1 implementer and part (``""`` when unreadable).
    isas : tuple[str, ...]
        ISAs (keys of ``tile.ISAS``) that the CPU *and* the OS can run, in
        increasing order of preference; always starts with ``"scalar"``.
    best_isa : str
        ``isas[-1]``.
    vector_bits : int
        Vector width of ``best_isa`` in bits (SVE: the current VL; scalar: 32).
    vector_registers : int
        Architectural vector registers of ``best_isa``.
    sve_vector_bits : int | None
        Current SVE vector length in bits; None without usable SVE.
    fma_units : int | None
        ``best_isa`` FMAs a core retires per cycle (its FMA pipes; a Zen 4's AVX-512
        FMA takes both of its 256-bit pipes: 1) when known from the vendor's
        optimization guide, else None (measure the peak instead).
    caches : tuple[Cache, ...]
        From Linux sysfs; ``()`` when unavailable.
    features : dict
        Raw feature bits and registers (CPUID bits, XCR0, HWCAPs, family/model).
    """
    arch: str
    vendor: str
    model_name: str
    isas: tuple[str, ...]
    best_isa: str
    vector_bits: int
    vector_registers: int
    sve_vector_bits: int | None
    fma_units: int | None
    caches: tuple[Cache, ...]
    features: dict[str, Any] = dataclasses.field(hash=False)

    def supports(self, isa: str) -> bool:
        """True when this CPU and OS can run ``isa``.

        Raises ValueError for a name that is not a key of ``tile.ISAS``.
        """
        if isa not in ISAS:
            raise ValueError(f"unknown ISA {isa!r}; valid ISAs: {', '.join(ISAS)}")
        return isa in self.isas

    def supports_tile(self, spec) -> bool:
        """True when this CPU and OS run ``spec`` (a TileSpec): its ISA, and the feature
        its types need beyond it (``spec.feature``, e.g. ``asimdfhm`` for FMLAL,
        ``i8mm`` for SUDOT, ``sme_i8i32`` for SMOPA)."""
        return self.supports(spec.isa) and (spec.feature is None
                                            or bool(self.features.get(spec.feature)))

    def cache(self, level: int, type: str = "Data") -> Cache | None:
        """The cache at ``level`` of ``type`` (``"Data"``, ``"Instruction"`` or
        ``"Unified"``); a ``"Data"`` request falls back to a unified cache at that
        level (L2/L3 are usually unified). None when there is none."""
        for c in self.caches:
            if c.level == level and c.type == type:
                return c
        if type == "Data":
            return self.cache(level, "Unified")
        return None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (lists for tuples); see :meth:`from_json`."""
        d = dataclasses.asdict(self)
        d["isas"] = list(self.isas)
        d["caches"] = [dataclasses.asdict(c) for c in self.caches]
        d["features"] = dict(self.features)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CpuInfo":
        """Inverse of :meth:`to_json`. Raises KeyError/TypeError on a bad dict."""
        d = dict(d)
        d["isas"] = tuple(d["isas"])
        d["caches"] = tuple(Cache(**c) for c in d["caches"])
        d["features"] = dict(d["features"])
        return cls(**d)


# -- the C probe ---------------------------------------------------------------

def _build_at_runtime():
    """Compile the probe through :func:`microkernel.build.load_module` (source
    trees that were never built); returns the module (``.ffi``, ``.lib``)."""
    from . import _probe_build as pb
    from .build import load_module
    return load_module("probe", pb.CDEF, pb.source_text(), cflags=pb.CFLAGS)


@functools.lru_cache(maxsize=None)
def load_c_probe():
    """``(ffi, lib)`` of the compiled C probe (``microkernel._probe``).

    Uses the installed extension; from a source tree that was never built, compiles
    it once with cffi (baseline flags) into the build cache of
    :mod:`microkernel.build`. Raises :class:`ProbeError` when
    neither works (no C compiler, no c_src/).
    """
    try:
        from . import _probe as module  # type: ignore[attr-defined]
    except ImportError:
        try:
            module = _build_at_runtime()
        except Exception as exc:  # compiler missing, c_src missing, ...
            raise ProbeError(f"cannot build the C CPU probe: {exc}") from exc
    return module.ffi, module.lib


_X86_FEATURES = ("sse2", "osxsave", "avx", "fma", "f16c", "avx2", "avx512f",
                 "avx512dq", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                 "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "amx_permitted",
                 "hypervisor", "os_ymm", "os_zmm", "os_amx")
_ARM_FEATURES = ("neon", "sve", "sve2", "asimdhp", "asimddp", "asimdfhm", "i8mm", "bf16",
                 "svei8mm", "svebf16", "sme", "sme_i8i32", "sme_f16f32", "sme_b16f32",
                 "sme_f32f32")
#: ISA name (microkernel.tile.ISAS) -> the probe's usable_* flag; an ISA the tile
#: table does not (yet) define is simply not reported
_USABLE = {"avx2": "usable_avx2", "avx512": "usable_avx512",
           "avx512bf16": "usable_avx512bf16", "avx512fp16": "usable_avx512fp16",
           "avx512vnni": "usable_avx512vnni", "amx": "usable_amx",
           "neon": "usable_neon", "sve": "usable_sve", "neondot": "usable_neondot",
           "neoni8mm": "usable_neoni8mm", "neonbf16": "usable_neonbf16",
           "neonfp16": "usable_neonfp16", "svei8mm": "usable_svei8mm",
           "svebf16": "usable_svebf16", "sme": "usable_sme"}


def _fma_units(vendor: str, family: int, best_isa: str) -> int | None:
    # AMD Software Optimization Guides for family 17h (models 30h+, Zen 2) and 19h
    # (Zen 3/4): two 256-bit FMA pipes (FP0, FP1). Zen 4's AVX-512 (the only AVX-512
    # of family 19h) runs a 512-bit FMA on both of those pipes: one zmm FMA per cycle
    # (measured on a Zen 4: avx512_8x16 in L1 at 113.6 GFLOP/s, 97% of a zmm FMA loop
    # at 117.2, the same as the avx2 loop's ymm rate). Elsewhere the count varies by
    # SKU (e.g. Xeon with one or two 512-bit FMA units): unknown.
    if vendor == "AuthenticAMD" and family == 0x19:
        return {"avx2": 2, "avx512": 1}.get(best_isa)
    return None


def info_from_c(ffi, feat, caches: tuple[Cache, ...] = ()) -> CpuInfo:
    """Build a :class:`CpuInfo` from a filled ``mk_cpu_features *`` (from
    ``mk_probe`` or one of the pure decoders, e.g. with injected CPUID values)."""
    usable = {"scalar"}
    if feat.arch in (1, 2):
        usable |= {isa for isa, flag in _USABLE.items()
                   if isa in ISAS and ISAS[isa].arch == ("x86_64" if feat.arch == 1 else "aarch64")
                   and getattr(feat, flag)}
    if feat.arch == 1:
        arch = "x86_64"
        names = _X86_FEATURES
        features: dict[str, Any] = {n: bool(getattr(feat, n)) for n in names}
        features.update(family=feat.family, model=feat.model,
                        stepping=feat.stepping, xcr0=int(feat.xcr0))
    elif feat.arch == 2:
        arch = "aarch64"
        features = {n: bool(getattr(feat, n)) for n in _ARM_FEATURES}
        features["sme_vector_bits"] = int(feat.sme_vector_bits)
        features.update(hwcap=int(feat.hwcap), hwcap2=int(feat.hwcap2),
                        midr=int(feat.midr), implementer=feat.family,
                        part=feat.model, revision=feat.stepping)
    else:
        arch = platform.machine().lower() or "unknown"
        features = {}
    isas = tuple(n for n in ISAS if n in usable)   # ISAS is in preference order
    # the best fp32 ISA (typed ISAs such as amx or neondot serve their types only; SME is
    # never picked by itself: tile.IsaInfo.general)
    best = [n for n in isas if ISAS[n].general][-1]
    sve_bits = int(feat.sve_vector_bits) if "sve" in usable else None
    vector_bits = sve_bits if best == "sve" else 32 * ISAS[best].lanes
    vendor = ffi.string(feat.vendor).decode("ascii", "replace")
    return CpuInfo(
        arch=arch,
        vendor=vendor,
        model_name=ffi.string(feat.model_name).decode("ascii", "replace"),
        isas=isas,
        best_isa=best,
        vector_bits=vector_bits,
        vector_registers=ISAS[best].vector_registers,
        sve_vector_bits=sve_bits,
        fma_units=_fma_units(vendor, feat.family, best) if arch == "x86_64" else None,
        caches=tuple(caches),
        features=features,
    )


@functools.lru_cache(maxsize=None)
def probe() -> CpuInfo:
    """Probe the running CPU (cached for the life of the process).

    Returns a :class:`CpuInfo`. Raises :class:`ProbeError` when the C probe can
    neither be imported nor compiled.
    """
    ffi, lib = load_c_probe()
    feat = ffi.new("mk_cpu_features *")
    if lib.mk_probe(feat) != 0:
        raise ProbeError("mk_probe() failed")
    return info_from_c(ffi, feat, read_caches())


# -- CLI -----------------------------------------------------------------------

def _size(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def format_table(info: CpuInfo) -> str:
    """Plain-text rendering of ``info`` for ``microkernel probe``."""
    rows = [
        ("arch", info.arch),
        ("vendor", info.vendor or "-"),
        ("model", info.model_name or "-"),
        ("ISAs (CPU and OS)", ", ".join(info.isas)),
        ("best ISA", info.best_isa),
        ("vector bits", str(info.vector_bits)),
        ("vector registers", str(info.vector_registers)),
        ("SVE vector bits", "-" if info.sve_vector_bits is None else str(info.sve_vector_bits)),
        (f"{info.best_isa} FMAs per cycle",
         "unknown" if info.fma_units is None else str(info.fma_units)),
    ]
    flags = [k for k, v in info.features.items() if v is True]
    if flags:
        rows.append(("feature bits", " ".join(flags)))
    if "xcr0" in info.features:
        rows.append(("XCR0", hex(info.features["xcr0"])))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    if info.caches:
        lines += ["", f"{'cache':<6} {'type':<12} {'size':>10} {'ways':>5} "
                      f"{'sets':>6} {'line':>5}"]
        for c in info.caches:
            lines.append(f"L{c.level:<5} {c.type:<12} {_size(c.size_bytes):>10} "
                         f"{c.ways if c.ways is not None else '-':>5} "
                         f"{c.sets if c.sets is not None else '-':>6} "
                         f"{c.line_bytes if c.line_bytes is not None else '-':>5}")
    else:
        lines += ["", "caches: not available (no Linux sysfs)"]
    return "\n".join(lines)


def cli_probe(json_out: bool = False) -> int:
    """``microkernel probe [--json]``: print the table (or JSON) to stdout.

    Returns the exit status: 0, or 1 (message on stderr) on :class:`ProbeError`.
    """
    try:
        info = probe()
    except ProbeError as exc:
        print(f"microkernel probe: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(info.to_json()) if json_out else format_table(info))
    return 0
