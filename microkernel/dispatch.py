"""Runtime dispatch: which kernels this machine runs, and which one ``gemm`` uses.

An ISA is usable when the probe says both the CPU and the OS support it
(``probe().isas``). ``MICROKERNEL_ISA=<isa>`` narrows the usable set to that ISA plus
scalar (to study a fallback path on a bigger CPU); naming an ISA this CPU or OS
cannot run raises :class:`IsaUnavailableError`, never SIGILL: a kernel module is
compiled and imported only after its ISA is cleared here.
"""
from __future__ import annotations

import difflib
import os

from . import registry
from .tile import ISAS, TileError, TileSpec

__all__ = ["IsaUnavailableError", "usable_isas", "best_isa", "kernels", "get_kernel",
           "default_tile", "check_source"]


class IsaUnavailableError(RuntimeError):
    """The requested ISA is not supported by this CPU and OS (or by MICROKERNEL_ISA)."""


def _probe():
    from .probe import probe
    return probe()


def usable_isas() -> tuple[str, ...]:
    """ISAs kernels may use here, least to most preferred (honours MICROKERNEL_ISA).

    Raises ValueError for an unknown MICROKERNEL_ISA and IsaUnavailableError when the
    forced ISA is not supported by this CPU and OS.
    """
    info = _probe()
    forced = os.environ.get("MICROKERNEL_ISA", "").strip().lower()
    if not forced:
        return tuple(info.isas)
    if forced not in ISAS:
        raise ValueError(f"MICROKERNEL_ISA={forced!r} is not an ISA; valid: {', '.join(ISAS)}")
    if forced not in info.isas:
        raise IsaUnavailableError(
            f"MICROKERNEL_ISA={forced}: this CPU/OS cannot run {forced} "
            f"(the probe found: {', '.join(info.isas)})")
    # the forced ISA, plus scalar; a typed ISA keeps its base fp32 ISA usable too
    base = [i for i in info.isas if ISAS[i].general]
    keep = ("scalar", forced) if ISAS[forced].implied == "f32" else ("scalar", base[-1], forced)
    return tuple(i for i in info.isas if i in keep)


def best_isa() -> str:
    """The best usable ISA of fp32 tiles (typed ISAs serve their own types only; SME only
    when MICROKERNEL_ISA=sme forces it: tile.IsaInfo.general)."""
    usable = usable_isas()
    forced = os.environ.get("MICROKERNEL_ISA", "").strip().lower()
    if forced in usable and ISAS[forced].implied == "f32":
        return forced
    return [i for i in usable if ISAS[i].general][-1]


def _feature_ok(spec: TileSpec) -> bool:
    """The feature ``spec``'s types need beyond its ISA, if any, is there."""
    return spec.feature is None or bool(_probe().features.get(spec.feature))


def default_tile(isa: str | None = None) -> TileSpec:
    """gemm()'s default tile for ``isa`` (default: the best usable ISA), from
    :data:`microkernel.registry.DEFAULTS`."""
    isa = isa or best_isa()
    try:
        return registry.default(isa)
    except KeyError:
        raise IsaUnavailableError(f"no built-in tile for ISA {isa!r}") from None


def kernels(types: str | None = "f32") -> list[str]:
    """Names of the built-in kernels this machine can run, best ISA first: of input
    ``types`` (default fp32; None: every type). Raises ValueError for types that are
    not a key of :data:`microkernel.dtypes.TYPES`."""
    if types is not None:
        from .dtypes import TYPES
        if not isinstance(types, str) or types not in TYPES:
            raise ValueError(f"kernels(): unknown input types {types!r}; valid: "
                             f"{', '.join(TYPES)} (None: every type)")
    usable = usable_isas()
    runnable = [s for s in registry.BUILTIN if s.isa in usable and _feature_ok(s)
                and (types is None or s.types == types)]
    # best ISA first, each ISA's default first
    runnable.sort(key=lambda s: (-usable.index(s.isa), s.types != "f32",
                                 s != registry.default(s.isa)))
    return [s.name for s in runnable]


def get_kernel(name: str | TileSpec | None = None, *, source: str | os.PathLike | None = None):
    """Load a kernel by name (any legal tile name, e.g. ``avx512_12x32``), by spec, or
    the default for the best usable ISA when ``name`` is None.

    ``source``: path (relative to the working directory, kept as given in
    ``Kernel.label``) of a UTF-8 C file that replaces the generated micro-kernel of that
    tile: a hand-written or edited variant, compiled with the same driver and the ISA's
    flags in one translation unit ahead of the driver (so its file-scope names must not
    clash with the driver's ``mk_*`` ones; it may include system headers only). It must
    define the tile's micro-kernel (``mk_ukernel_<name>``, contract in
    ``c_src/mk_ukernel.h``) and may define its edge entry point
    (``mk_ukernel_<name>_edge``; without it the driver computes the edge tiles in its
    MR x NR buffer); start from ``microkernel template NAME``, the generated file in
    ``c_src/ukernels/`` or ``microkernel.codegen.generate(spec)``.

    Raises TileError (bad or unknown name, with the nearest built-in names; a source
    that does not define the micro-kernel), IsaUnavailableError (this CPU/OS cannot run the tile's
    ISA), OSError (source unreadable), UnicodeDecodeError (not UTF-8) and
    build.BuildError (compiler failure, or a module that does not load).
    """
    from .kernel import load
    if name is None:
        spec = default_tile()
    elif isinstance(name, TileSpec):
        spec = name
    elif isinstance(name, str):
        try:
            spec = TileSpec.from_name(name)
        except TileError as exc:
            near = difflib.get_close_matches(name, registry.names(), n=3, cutoff=0.6)
            raise TileError(f"{exc}. " + (f"Nearest built-in kernels: {', '.join(near)}; "
                                          if near else "")
                            + "`microkernel list` shows them all") from None
    else:
        raise TypeError(f"kernel must be a name, a TileSpec or None, not {type(name).__name__}")
    usable = usable_isas()
    if spec.isa not in usable:
        raise IsaUnavailableError(
            f"{spec.name} needs {spec.isa}, which this CPU/OS cannot run here "
            f"(usable: {', '.join(usable)})")
    if not _feature_ok(spec):
        raise IsaUnavailableError(
            f"{spec.name} needs {spec.isa} with {spec.feature} ({spec.types} tiles), which "
            f"this CPU/OS does not report (microkernel probe lists the feature bits)")
    if source is None:
        return load(spec)
    path = os.fspath(source)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    check_source(spec, text, path)
    return load(spec, text, path)


def check_source(spec: TileSpec | str, text: str, path) -> None:
    """TileError unless the C ``text`` (read from ``path``) defines ``spec``'s
    micro-kernel entry point, ``mk_ukernel_<name>`` (c_src/mk_ukernel.h)."""
    from . import codegen
    from .kernel import defines
    spec = TileSpec.of(spec)
    sym = codegen.symbol(spec)
    if not defines(text, sym):
        raise TileError(f"{os.fspath(path)} does not define {sym}, the micro-kernel of the "
                        f"{spec.name} module (contract: c_src/mk_ukernel.h)")
