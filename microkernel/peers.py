"""The libraries a user would pick instead of ours, as reference contenders.

Each peer computes ``C = A @ B`` (float32, beta = 0) into a preallocated C, limited
to a given number of threads:

* ``numpy``: ``numpy.matmul(A, B, out=C)``, its BLAS (OpenBLAS in the wheels) limited
  through threadpoolctl; always present;
* ``torch``: PyTorch's CPU ``torch.matmul(a, b, out=c)`` on tensors sharing the numpy
  buffers (MKL or oneDNN behind it), limited with ``torch.set_num_threads``; present
  when PyTorch imports;
* ``blis``: the ``blis`` package (``blis.py.gemm(A, B, out=C, beta=0.0)``; its default
  beta is 1, which would accumulate into C), built without threads; present when it
  imports.

Peers are references in a race (:class:`microkernel.timing.Contender` with
``reference=True``): timed in every round, shown beside our tiles, never the ranking's
denominator.
"""
from __future__ import annotations

import contextlib
import importlib.util

import numpy as np

__all__ = ["available", "call", "limit_threads", "describe", "PEERS"]

PEERS = ("numpy", "torch", "blis")


def available(names=None) -> list[str]:
    """The peers (of ``names``, default all) that can run here, numpy first."""
    out = []
    for name in names or PEERS:
        if name not in PEERS:
            raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
        if name == "numpy" or importlib.util.find_spec(name) is not None:
            out.append(name)
    return out


def call(name: str, A: np.ndarray, B: np.ndarray, C: np.ndarray):
    """A function of no arguments computing ``C[...] = A @ B`` with peer ``name``.

    A (m, k), B (k, n) and C (m, n) are float32 ndarrays; C is written in place.
    Raises ValueError for an unknown peer, ImportError when it is not installed."""
    if name == "numpy":
        return lambda: np.matmul(A, B, out=C)
    if name == "torch":
        import torch
        a, b, c = torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(C)
        return lambda: torch.matmul(a, b, out=c)
    if name == "blis":
        from blis.py import gemm as blis_gemm
        return lambda: blis_gemm(A, B, out=C, beta=0.0)
    raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")


@contextlib.contextmanager
def limit_threads(threads: int, names=None):
    """Limit every peer in ``names`` (default: the available ones) to ``threads``
    threads for the duration of the block."""
    from threadpoolctl import threadpool_limits
    names = available(names) if names is None else names
    torch_before = None
    with threadpool_limits(limits=threads, user_api="blas"):
        if "torch" in names:
            import torch
            torch_before = torch.get_num_threads()
            torch.set_num_threads(threads)
        try:
            yield
        finally:
            if torch_before is not None:
                import torch
                torch.set_num_threads(torch_before)


def describe(name: str) -> str:
    """What stands behind a peer here, e.g. ``numpy (openblas 0.3.31 Haswell)``."""
    if name == "numpy":
        try:
            from threadpoolctl import threadpool_info
            for pool in threadpool_info():
                if pool.get("user_api") == "blas":
                    return (f"numpy ({pool.get('internal_api')} {pool.get('version')} "
                            f"{pool.get('architecture', '') or ''})").strip().replace(" )", ")")
        except Exception:  # informational only
            pass
        return "numpy"
    if name == "torch":
        try:
            import torch
            mkl = torch.backends.mkl.is_available()
            return f"torch {torch.__version__} ({'MKL' if mkl else 'no MKL'})"
        except Exception:
            return "torch"
    if name == "blis":
        try:
            from importlib.metadata import version
            return f"blis {version('blis')}"
        except Exception:
            return "blis"
    return name
