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

Typed GEMMs (bf16, fp16, int8 inputs: :func:`typed_call`, :func:`available` with
``types``): each peer on what it offers for those inputs, its result checked with the
bound of its own arithmetic (:class:`TypedPeer`):

* ``numpy`` on the float32 upcast of A and B (made once, outside the timing: numpy has
  no bf16/fp16/int8 GEMM of BLAS speed), an fp32 GEMM of the same values;
* ``torch`` on the native dtype: ``torch.matmul`` on bfloat16 / float16 tensors
  (oneDNN on CPUs with AVX512-BF16 / AMX), whose result is bf16 / fp16 (one rounding
  of the result: 2^-8 / 2^-11 relative); ``torch._int_mm`` (int32 out) for int8 x int8
  where this PyTorch has it on CPU (probed once on a small product); PyTorch has no
  u8 x s8 or u8 x u8 matmul, so those types have no torch peer;
* ``blis``: float32 only.

Their runtimes do not stop with their calls: numpy's OpenBLAS workers spin after each
one (:func:`openblas_spin_note` says so when a comparison times back to back).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import os
import shlex
import sys

import numpy as np

__all__ = ["available", "call", "limit_threads", "describe", "PEERS", "TypedPeer",
           "typed_call", "typed_why_not", "openblas_spin_note", "torch_spin_note"]

PEERS = ("numpy", "torch", "blis")
#: the pip package that installs each optional peer
PIP = {"torch": "torch", "blis": "blis"}


def available(names=None, types: str = "f32") -> list[str]:
    """The peers of ``names`` (None: all; an empty list: none) that can run here on
    inputs of ``types`` (microkernel.dtypes names), in the order given.

    Raises ValueError for a name that is not a peer."""
    out = []
    for name in PEERS if names is None else names:
        if name not in PEERS:
            raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
        if typed_why_not(name, types) is None:
            out.append(name)
    return out


def typed_why_not(name: str, types: str = "f32") -> str | None:
    """Why peer ``name`` has no GEMM on ``types`` here (None: it has one), as a phrase
    that stands on its own: not a peer (the known ones listed), not installed (with the
    pip package), or no GEMM on those types."""
    if name not in PEERS:
        return f"{name!r} is not a peer (known: {', '.join(PEERS)})"
    if name == "numpy":
        return None
    if importlib.util.find_spec(name) is None:
        return (f"{name} is not installed here: {shlex.quote(sys.executable)} -m pip "
                f"install {PIP[name]}")
    if types == "f32":
        return None
    if name == "blis":
        return "blis is float32 only"
    if types in ("bf16", "f16", "f16h"):
        return None
    if types == "s8s8":
        return _torch_int_mm_error()
    return f"PyTorch has no {types} (u8 x s8 / u8 x u8) matmul; torch._int_mm is s8 x s8"


@functools.lru_cache(maxsize=None)
def _torch_int_mm_error() -> str | None:
    """None when ``torch._int_mm`` multiplies int8 CPU tensors here, else why not."""
    try:
        import torch
        if not hasattr(torch, "_int_mm"):
            return f"torch {torch.__version__} has no torch._int_mm"
        a = torch.ones((32, 64), dtype=torch.int8)
        b = torch.ones((64, 32), dtype=torch.int8)
        c = torch._int_mm(a, b)
        if c.dtype != torch.int32 or int(c[0, 0]) != 64:
            return f"torch._int_mm returned {c.dtype} {c[0, 0]!r} for 64 ones"
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means: no int8 peer here
        return f"torch._int_mm on CPU failed: {type(exc).__name__}: {exc}"


@dataclasses.dataclass(frozen=True)
class TypedPeer:
    """A peer's GEMM on typed inputs: ``fn()`` computes, ``result()`` returns its last C
    (a numpy array), checked against the float64 reference of ``check_types``
    (microkernel.dtypes: "f32" for numpy's fp32 GEMM of the upcast values) plus
    ``result_rounding`` x |C| (a bf16 / fp16 result); ``what`` says what ran."""
    fn: object
    result: object
    check_types: str
    result_rounding: float
    what: str


def typed_call(name: str, A: np.ndarray, B: np.ndarray, types: str) -> TypedPeer:
    """Peer ``name``'s GEMM on A (m, k) and B (k, n) of ``types`` (see the module
    docstring). Raises ValueError when the peer has none (:func:`typed_why_not`)."""
    why = typed_why_not(name, types)
    if why is not None:
        raise ValueError(f"peer {name} on {types}: {why}")
    m, n = A.shape[0], B.shape[1]
    if name == "numpy":
        A32 = np.ascontiguousarray(A, dtype=np.float32)
        B32 = np.ascontiguousarray(B, dtype=np.float32)
        C32 = np.empty((m, n), np.float32)
        return TypedPeer(lambda: np.matmul(A32, B32, out=C32), lambda: C32, "f32", 0.0,
                         "numpy.matmul on the float32 upcast (fp32 BLAS)")
    import torch
    if types in ("bf16", "f16", "f16h"):
        dt = torch.bfloat16 if types == "bf16" else torch.float16
        # bf16: numpy's ml_dtypes array -> torch through the bits (torch.from_numpy
        # does not take ml_dtypes.bfloat16)
        a = torch.from_numpy(np.ascontiguousarray(A).view(np.int16)).view(dt)
        b = torch.from_numpy(np.ascontiguousarray(B).view(np.int16)).view(dt)
        c = torch.empty((m, n), dtype=dt)
        rounding = 2.0 ** -8 if types == "bf16" else 2.0 ** -11
        # fp16: checked with fp16 accumulation's bound (oneDNN may accumulate in fp16)
        return TypedPeer(lambda: torch.matmul(a, b, out=c), lambda: c.float().numpy(),
                         "bf16" if types == "bf16" else "f16h", rounding,
                         f"torch.matmul on {dt} ({_torch_backend()}), {dt} result")
    a = torch.from_numpy(np.ascontiguousarray(A))
    b = torch.from_numpy(np.ascontiguousarray(B))
    box = {}

    def fn():
        box["c"] = torch._int_mm(a, b)
    return TypedPeer(fn, lambda: box["c"].numpy(), types, 0.0,
                     "torch._int_mm on int8 (int32 result)")


def _torch_backend() -> str:
    try:
        import torch
        return "oneDNN" if torch.backends.mkldnn.is_available() else "no oneDNN"
    except Exception:  # noqa: BLE001 - informational
        return "?"


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


#: OpenBLAS's idle workers spin for 2**OPENBLAS_THREAD_TIMEOUT TSC cycles after a call
#: before they sleep: 28 unless that variable was set when the library loaded (clamped
#: to 4..30; OpenBLAS driver/others/blas_server.c, OpenMathLib/OpenBLAS issue #5171)
OPENBLAS_TIMEOUT_DEFAULT = 28


def openblas_spin_note(names, threads: int, pause: float) -> str | None:
    """A line for a timing that runs contenders right after numpy's OpenBLAS with
    several threads and no pause (``compare --pause 0``), None otherwise: its workers
    spin after every call (:data:`OPENBLAS_TIMEOUT_DEFAULT`), so whatever runs next
    shares the cores with them. On the 2-core Zen 3, back to back at 2 threads,
    ``avx2_4x24_u8`` read 0.55-0.74x numpy by default and 1.05-1.09x with
    OPENBLAS_THREAD_TIMEOUT=4 (bench/results/zen3/b2b_openblas_timeout/)."""
    if "numpy" not in names or threads <= 1 or pause > 0 or "openblas" not in describe("numpy"):
        return None
    raw = os.environ.get("OPENBLAS_THREAD_TIMEOUT", "").strip()
    try:
        log2 = min(30, max(4, int(raw)))
    except ValueError:
        log2 = OPENBLAS_TIMEOUT_DEFAULT
    if log2 <= 16:      # 2^16 cycles: some 30 us, gone before the next sample starts
        return None
    return (f"numpy's OpenBLAS workers spin 2^{log2} TSC cycles after each call "
            f"(OPENBLAS_THREAD_TIMEOUT={raw or 'unset'}), so back to back the contender after "
            f"numpy shares its cores with them; OPENBLAS_THREAD_TIMEOUT=4 in the environment "
            f"that starts Python puts them to sleep at once (or time with --pause 0.3)")


#: libgomp's idle workers spin this many iterations after a parallel region before they
#: sleep, unless GOMP_SPINCOUNT or OMP_WAIT_POLICY was set when it loaded (libgomp
#: manual, "GOMP_SPINCOUNT"); PyTorch's wheels carry a libgomp of their own
GOMP_SPIN_DEFAULT = 300_000


def torch_spin_note(names, threads: int, pause: float) -> str | None:
    """:func:`openblas_spin_note`'s twin for PyTorch's OpenMP pool: a line when torch is
    timed with several threads and no pause, None when the user set a short spin
    (GOMP_SPINCOUNT <= :data:`microkernel.threads.SPIN_COUNT`) or OMP_WAIT_POLICY=passive.
    On the 16-core Sapphire Rapids host, 16 threads back to back, ``gemm()`` read 0.14x
    its alone figure at 1024^3 and torch 0.15x at 2048^3; with OPENBLAS_THREAD_TIMEOUT=4
    and GOMP_SPINCOUNT=20000 set before Python started, every library read 0.96-1.15x
    (bench/results/sapphire-rapids/threads_b2b/)."""
    from . import threads as threads_mod
    if "torch" not in names or threads <= 1 or pause > 0:
        return None
    if os.environ.get("OMP_WAIT_POLICY", "").strip().lower() == "passive":
        return None
    user = threads_mod.user_set_wait_policy()
    raw = os.environ.get("GOMP_SPINCOUNT", "").strip() if user else ""
    try:
        if raw and int(raw) <= threads_mod.SPIN_COUNT:
            return None
    except ValueError:
        pass
    return (f"PyTorch's OpenMP workers spin up to GOMP_SPINCOUNT iterations (libgomp's "
            f"default {GOMP_SPIN_DEFAULT:,}) after each call, so back to back the contender "
            f"after torch shares its cores with them; GOMP_SPINCOUNT={threads_mod.SPIN_COUNT} "
            f"(or OMP_WAIT_POLICY=passive) in the environment that starts Python cuts that "
            f"(or time with --pause 0.3)")


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
