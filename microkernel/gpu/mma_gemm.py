"""``mma_gemm``: the checked front end of the tensor-core kernels.

C := alpha * A @ B + beta * C with f16, bf16 or tf32 inputs and fp32 accumulation
and output, on numpy arrays or CUDA device arrays (numba, or anything with
``__cuda_array_interface__``: CuPy, PyTorch). The kernels
(:mod:`microkernel.gpu.mma_kernel`) copy 16-byte chunks with ``cp.async``, so
every row of A and B must start 16-byte aligned: numpy inputs are copied to the
device in that form (rows padded to a multiple of 8 halves / 4 floats), device
inputs whose rows are not aligned (K or N not a multiple of 8 / 4, an odd base
address, a strided view) are repacked on the device first by a small copy kernel.
"""
from __future__ import annotations

import numbers

import numpy as np

from .front import _finish
from .kernel import _import_cuda
from .mma_tile import MmaTile, PRECISIONS

__all__ = ["mma_gemm", "dtype_name", "PRECISION_OF_DTYPE"]

#: Input dtype name -> precision.
PRECISION_OF_DTYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32"}
_DTYPE_OF = {v: k for k, v in PRECISION_OF_DTYPE.items()}


def dtype_name(x) -> str | None:
    """'float16', 'bfloat16', 'float32', ... of a numpy/CuPy/PyTorch/numba array
    (ml_dtypes.bfloat16 and torch.bfloat16 both give 'bfloat16'); None if unknown."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        cai = getattr(x, "__cuda_array_interface__", None)
        if cai is None:
            return None
        dt = cai["typestr"]
    s = str(dt)
    if s.startswith("torch."):
        return s[len("torch."):]
    try:
        return np.dtype(dt).name
    except TypeError:
        return s


def _is_device(x) -> bool:
    if type(x).__module__.split(".")[0] == "torch":
        return bool(getattr(x, "is_cuda", False))   # (its interface may raise for bf16)
    try:
        return hasattr(x, "__cuda_array_interface__") or (
            hasattr(x, "copy_to_host") and hasattr(x, "shape"))
    except Exception:  # noqa: BLE001
        return False


def _shape(x, name):
    shape = tuple(int(v) for v in x.shape)
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D, got {len(shape)}-D with shape {shape}")
    return shape


def _words(precision: str):
    return np.float32 if precision == "tf32" else np.uint16


def _device_words(x, precision):
    """A numba device array view of device operand x as the kernel's element type."""
    cuda = _import_cuda()
    w = _words(precision)
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch
        if precision != "tf32":
            x = x.view(torch.int16)       # torch's interface may not export bfloat16
    elif mod == "cupy" and precision != "tf32":
        x = x.view(np.uint16)
    arr = x if hasattr(x, "copy_to_host") else cuda.as_cuda_array(x)
    return arr.view(w) if np.dtype(arr.dtype) != np.dtype(w) else arr


_PAD_KERNELS: dict = {}
#: ``numba.cuda``, bound on first use: the kernels below must name it as a module
#: global (the simulator swaps module globals that are ``numba.cuda``).
cuda = None


def _pad_copy(src, cols_padded: int):
    """A C-contiguous device copy of device array ``src`` with rows padded to
    ``cols_padded`` columns (the padding is never read: the kernel's src-size
    stops at K/N)."""
    global cuda
    cuda = _import_cuda()
    key = np.dtype(src.dtype).name
    k = _PAD_KERNELS.get(key)
    if k is None:
        def pad(s, d):
            i, j = cuda.grid(2)
            if i < s.shape[0] and j < s.shape[1]:
                d[i, j] = s[i, j]
        k = _PAD_KERNELS[key] = cuda.jit(pad)
    m, n = src.shape
    dst = cuda.device_array((m, cols_padded), src.dtype)
    if m and n:
        k[((m + 15) // 16, (n + 15) // 16), (16, 16)](src, dst)
    return dst


def _contiguous(arr) -> bool:
    itemsize = np.dtype(arr.dtype).itemsize
    cai = getattr(arr, "__cuda_array_interface__", None)
    strides = cai.get("strides") if cai is not None else getattr(arr, "strides", None)
    return strides is None or tuple(strides) == (arr.shape[1] * itemsize, itemsize)


def _aligned(arr, ce) -> bool:
    """C-contiguous, rows a multiple of 16 bytes, base 16-byte aligned (the
    simulator's arrays have no device address: only their strides count)."""
    cai = getattr(arr, "__cuda_array_interface__", None)
    base_ok = cai is None or cai["data"][0] % 16 == 0
    return _contiguous(arr) and arr.shape[1] % ce == 0 and base_ok


def _operand(x, precision, is_dev, rows, cols):
    """The device array the kernel reads for operand x (rows x cols)."""
    cuda = _import_cuda()
    ce = 16 // np.dtype(_words(precision)).itemsize
    cp = -(-max(cols, 1) // ce) * ce
    if is_dev:
        arr = _device_words(x, precision)
        return arr if _aligned(arr, ce) else _pad_copy(arr, cp)
    host = np.asarray(x)
    host = host.view(np.uint16) if precision != "tf32" else host.astype(np.float32, copy=False)
    buf = np.zeros((max(rows, 1), cp), host.dtype)
    buf[:rows, :cols] = host
    return cuda.to_device(buf)


def mma_gemm(A, B, C=None, *, alpha: float = 1.0, beta: float = 0.0,
             precision: str | None = None, tile: MmaTile | None = None):
    """C := alpha * A @ B + beta * C on the tensor cores (``mma.sync``), fp32 out.

    Parameters
    ----------
    A : (M, K) array, numpy or CUDA device array (numba, CuPy, PyTorch)
        float16 (precision "f16"), bfloat16 ("bf16": ``ml_dtypes.bfloat16`` in
        numpy, ``torch.bfloat16``), or float32 ("tf32": rounded to tf32 in the
        kernel with ``cvt.rna.tf32.f32``).
    B : (K, N) array of the same dtype and kind.
    C : (M, N) float32, optional
        Updated in place and returned; None: a new (M, N) float32 array (numpy
        when A and B are numpy arrays, else a numba device array), beta ignored.
    alpha, beta : float
        Applied in float32. beta == 0: C is only written (NaN/Inf in C do not
        survive); alpha == 0 or K == 0: C := beta*C, A and B not read; M == 0 or
        N == 0: nothing is touched.
    precision : {"f16", "bf16", "tf32"}, optional
        Default: from A's dtype. Must match the dtype of A and B.
    tile : MmaTile, optional
        The kernel (default :data:`microkernel.gpu.mma_kernel.DEFAULT_MMA_TILES`).

    Returns
    -------
    C (the argument, updated) or the new array.

    Raises
    ------
    TypeError
        A, B or C not an array; a dtype that does not match ``precision`` (or no
        precision for it); C not float32; alpha/beta not real; tile not an MmaTile.
    ValueError
        Not 2-D, inner dimensions that differ, C of the wrong shape, a read-only
        numpy C, an unknown precision, a tile of another precision, a
        non-contiguous device C, or sizes beyond the grid / 32-bit index limits.
    ImportError
        numba-cuda is not installed.
    """
    from . import mma_kernel
    cuda = _import_cuda()
    for nm, s in (("alpha", alpha), ("beta", beta)):
        if not isinstance(s, numbers.Real) or isinstance(s, bool):
            raise TypeError(f"{nm} must be a real number, got {type(s).__name__}")
    devs = {}
    for nm, x in (("A", A), ("B", B)):
        devs[nm] = _is_device(x)
        if not devs[nm] and not isinstance(x, np.ndarray):
            raise TypeError(f"{nm} must be a numpy array or a CUDA device array "
                            f"(__cuda_array_interface__), got {type(x).__name__}")
    if precision is None:
        precision = PRECISION_OF_DTYPE.get(dtype_name(A))
        if precision is None:
            raise TypeError(f"A has dtype {dtype_name(A)}; the tensor-core path takes "
                            f"float16, bfloat16 (ml_dtypes/torch) or float32 (tf32)")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    for nm, x in (("A", A), ("B", B)):
        if dtype_name(x) != _DTYPE_OF[precision]:
            raise TypeError(f"{nm} must be {_DTYPE_OF[precision]} for precision "
                            f"{precision!r}, got {dtype_name(x)}")
    m, k = _shape(A, "A")
    kb, n = _shape(B, "B")
    if kb != k:
        raise ValueError(f"inner dimensions differ: A is {m}x{k}, B is {kb}x{n}")
    c_dev = False
    if C is not None:
        c_dev = _is_device(C)
        if not c_dev and not isinstance(C, np.ndarray):
            raise TypeError(f"C must be a numpy array or a CUDA device array, got "
                            f"{type(C).__name__}")
        if dtype_name(C) != "float32":
            raise TypeError(f"C must be float32, got {dtype_name(C)}")
        if _shape(C, "C") != (m, n):
            raise ValueError(f"C must be {m}x{n} for A {m}x{k} @ B {k}x{n}, got "
                             f"{C.shape[0]}x{C.shape[1]}")
        if not c_dev and not C.flags.writeable:
            raise ValueError("C is read-only")
    if tile is None:
        tile = mma_kernel.DEFAULT_MMA_TILES[precision]
    if not isinstance(tile, MmaTile):
        raise TypeError(f"tile must be an MmaTile, got {type(tile).__name__}")
    if tile.precision != precision:
        raise ValueError(f"tile {tile.name} is for {tile.precision}, not {precision}")
    gx, gy = tile.grid(m, n)
    if gy > 65535 or max(m, n, k) >= 2**31:
        raise ValueError(f"M={m}, N={n}, K={k}: beyond the grid (65535 row blocks) or "
                         f"32-bit index limits")
    kern = mma_kernel.kernel_for(tile)
    any_dev = devs["A"] or devs["B"] or c_dev

    if C is None:
        beta = 0.0
        if m == 0 or n == 0:
            return (cuda.device_array((m, n), np.float32) if any_dev
                    else np.zeros((m, n), np.float32))
    elif m == 0 or n == 0:
        return C

    if k == 0 or alpha == 0:                 # A and B are not read: tiny stand-ins
        w = _words(precision)
        dA = cuda.to_device(np.zeros((1, 16 // np.dtype(w).itemsize), w))
        dB = dA
        kk = 0
    else:
        dA = _operand(A, precision, devs["A"], m, k)
        dB = _operand(B, precision, devs["B"], k, n)
        kk = k
    if C is None:
        dC = cuda.device_array((m, n), np.float32)
    elif c_dev:
        dC = C if hasattr(C, "copy_to_host") else cuda.as_cuda_array(C)
        if not _contiguous(dC):
            raise ValueError("a device C must be C-contiguous")
    elif beta == 0:
        dC = cuda.device_array((m, n), np.float32)      # C is not read
    else:
        dC = cuda.to_device(np.ascontiguousarray(C))
    kern.launch(dA, dB, dC, kk, alpha, beta)
    return _finish(C, dC, devs["A"], devs["B"], c_dev)
