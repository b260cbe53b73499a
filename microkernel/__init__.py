"""microkernel: prototype CPU SIMD GEMM micro-kernels, validate them, port the tile.

Public names: ``probe()``, ``CpuInfo``, ``kernels()``, ``get_kernel(name)``,
``TileSpec``, ``gemm(A, B, C=None, *, alpha=1.0, beta=0.0, kernel=None)``.
Importing the package compiles nothing: kernels are built on first use, after the
probe has cleared their ISA.
"""
from .tile import TileSpec, TileError
from .registry import BUILTIN as BUILTIN_TILES  # the registry's list (microkernel.registry)
# `probe` names the function; the module stays reachable as sys.modules["microkernel.probe"].
from .probe import probe, CpuInfo
try:
    from .gemm import gemm  # (same for `gemm`)
except ModuleNotFoundError as _exc:  # numpy (or ml_dtypes) not installed: the probe and
    if _exc.name not in ("numpy", "ml_dtypes"):  # the command line still load, and say so
        raise
    #: the name of the missing dependency that gemm() needs, or None
    MISSING_DEPENDENCY = _exc.name

    def gemm(*args, **kwargs):
        """Unavailable: a dependency is not installed (see MISSING_DEPENDENCY)."""
        raise ModuleNotFoundError(
            f"microkernel.gemm needs {MISSING_DEPENDENCY}, which is not installed: "
            f"pip install -e . (or run scripts/setup.sh)", name=MISSING_DEPENDENCY)
else:
    MISSING_DEPENDENCY = None

__all__ = ["probe", "CpuInfo", "kernels", "get_kernel", "TileSpec", "TileError",
           "BUILTIN_TILES", "gemm", "IsaUnavailableError"]
__version__ = "0.1.0"


def __getattr__(name):  # lazy: keep `import microkernel` free of cffi builds
    if name in ("kernels", "get_kernel", "IsaUnavailableError"):
        from . import dispatch
        return getattr(dispatch, name)
    raise AttributeError(f"module 'microkernel' has no attribute {name!r}")
