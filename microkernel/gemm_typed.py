"""``gemm()`` on bf16, fp16 and int8 inputs: the typed front end.

:func:`microkernel.gemm` hands over here when A or B is not float32. The types of the
GEMM come from the dtypes of A and B (:func:`microkernel.dtypes.types_of`: bfloat16 is
``ml_dtypes.bfloat16``); C is float32 for float inputs and int32 for integer ones. The
kernel is the one asked for (its tile's input types must match A and B: an ``f16h``
tile, fp16 accumulation, takes float16 inputs too) or the first of
:data:`microkernel.registry.TYPED_DEFAULTS` whose ISA this CPU and OS run, so every
type works on every machine, through a widening portable kernel where the CPU lacks
the instruction (:func:`kernel_for` says which one). BLAS semantics as for fp32; for
integer C, alpha and beta are integers and the arithmetic wraps modulo 2^32.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import dtypes
from .gemm import not_masked

__all__ = ["gemm_typed", "kernel_for", "default_kernel"]

_DEFAULT: dict = {}   # (types, MICROKERNEL_ISA) -> Kernel


def default_kernel(types: str):
    """The Kernel gemm() uses for inputs of ``types`` (a :data:`dtypes.TYPES` name) on
    this machine: the first :data:`registry.TYPED_DEFAULTS` tile whose ISA is usable.
    Raises IsaUnavailableError when none is (cannot happen with scalar in the list)."""
    import os
    from . import registry
    from .dispatch import IsaUnavailableError, get_kernel, usable_isas
    key = (types, os.environ.get("MICROKERNEL_ISA"))
    if key not in _DEFAULT:
        usable = usable_isas()
        names = registry.TYPED_DEFAULTS.get(types, ())
        from .dispatch import _feature_ok
        for name in names:
            spec = registry.spec(name)
            if spec.isa in usable and _feature_ok(spec):
                _DEFAULT[key] = get_kernel(spec)
                break
        else:
            raise IsaUnavailableError(f"no {types} kernel runs here (tried {', '.join(names)})")
    return _DEFAULT[key]


def kernel_for(A, B, kernel=None):
    """The Kernel ``gemm(A, B, kernel=kernel)`` runs (the result's provenance): for
    float32 A and B the fp32 default, else the typed one. Raises what gemm() raises."""
    from .dispatch import get_kernel
    t = dtypes.types_of(np.asarray(A).dtype, np.asarray(B).dtype)
    if kernel is None:
        if t.name == "f32":
            from .gemm import _kernel
            return _kernel(None)
        return default_kernel(t.name)
    from .kernel import Kernel
    k = kernel if isinstance(kernel, Kernel) else get_kernel(kernel)
    _check_kernel_types(k, t)
    return k


def _check_kernel_types(k, t) -> None:
    kt = k.spec.gemm_types
    if (kt.a, kt.b) != (t.a, t.b):
        raise TypeError(f"kernel {k.name} takes {kt.a} @ {kt.b}, but A is {t.a} and B is "
                        f"{t.b}; use a {t.name} tile (default: "
                        f"{default_kernel(t.name).name})")


def _check(name: str, x, dtype: np.dtype) -> None:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    not_masked(name, x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {x.ndim}-D with shape {x.shape}")
    if x.dtype != dtype:
        raise TypeError(f"{name} has dtype {x.dtype}; this GEMM needs {dtype}")


def _native(x: np.ndarray) -> bool:
    size = x.itemsize
    return x.ctypes.data % size == 0 and all(s % size == 0 for s in x.strides)


def _scalar(name: str, v, integer: bool):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    if not integer:
        return float(v)
    if not float(v).is_integer():
        raise ValueError(f"{name}={v!r}: an integer GEMM (int32 C) takes integer alpha and beta")
    iv = int(v)
    if not -2 ** 31 <= iv < 2 ** 31:
        raise ValueError(f"{name}={v!r} does not fit int32")
    return iv


def gemm_typed(A, B, C=None, *, alpha=1.0, beta=0.0, kernel=None, threads=None,
               blocking=None):
    """C := alpha * A @ B + beta * C for typed inputs (see the module docstring).

    A (m, k) and B (k, n): bfloat16, float16, int8 or uint8 ndarrays (pairs of
    :func:`microkernel.dtypes.types_of`), any 2-D views. C (m, n): float32 for float
    inputs, int32 for integer ones; None: a new array (then beta must be 0).

    Raises TypeError (unsupported dtypes, a kernel of other types, C of the wrong
    dtype, alpha/beta not real), ValueError (shapes, non-integer alpha/beta of an
    integer GEMM, C overlapping A or B or not writeable, bad threads/blocking).
    """
    from .gemm import _check_output, _check_rc, _dims, _driver, _if_contended
    from .threads import check_count, threads_for
    if (isinstance(A, np.ndarray) and isinstance(B, np.ndarray)
            and A.dtype == np.float32 and B.dtype == np.float32):
        raise TypeError("gemm_typed() takes bf16, fp16 and int8 / uint8 inputs; for float32 "
                        "A and B call microkernel.gemm")
    t = dtypes.types_of(A.dtype if isinstance(A, np.ndarray) else np.asarray(A).dtype,
                        B.dtype if isinstance(B, np.ndarray) else np.asarray(B).dtype)
    _check("A", A, t.dtype("a"))
    _check("B", B, t.dtype("b"))
    kern = kernel_for(A, B, kernel)
    kt = kern.spec.gemm_types
    out_dtype = kt.dtype("out")
    alpha = _scalar("alpha", alpha, kt.integer)
    beta = _scalar("beta", beta, kt.integer)
    m, n, k = _dims(A, B)
    if C is None:
        if beta != 0:
            raise ValueError(f"beta={beta} needs an input C; pass C or use beta=0")
        C = np.empty((m, n), dtype=out_dtype)
    else:
        _check("C", C, out_dtype)
        _check_output(C, A, B, m, n)
    auto = threads is None
    if auto:
        threads = threads_for(m, n, k)
    elif type(threads) is not int or not 1 <= threads <= 64:
        threads = check_count(threads)
    if m == 0 or n == 0:
        return C
    ffi, lib, cblk = _driver(kern, blocking, threads, k, n)
    if auto:
        threads = _if_contended(threads, m * n * k)
    if not _native(A):
        A = np.ascontiguousarray(A)
    if not _native(B):
        B = np.ascontiguousarray(B)
    out = C if _native(C) else (np.array(C, order="C") if beta != 0 else
                                np.empty((m, n), out_dtype))
    ctype = "int32_t *" if kt.integer else "float *"
    al, be = ffi.new(ctype, alpha), ffi.new(ctype, beta)
    ptr = lambda x: ffi.cast("void *", x.ctypes.data)  # noqa: E731
    sa, sb, sc = ([s // x.itemsize for s in x.strides] for x in (A, B, out))
    rc = lib.mk_gemm_t(m, n, k, al, ptr(A), sa[0], sa[1], ptr(B), sb[0], sb[1],
                       be, ptr(out), sc[0], sc[1], cblk, int(threads))
    _check_rc(rc)
    if out is not C:
        C[...] = out
    return C
