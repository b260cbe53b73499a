"""GEMM workloads: real problem shapes to time tiles on.

* ``deepbench``: the DeepBench device-inference GEMM set (baidu-research/DeepBench,
  code/kernels/gemm_problems.h, inference_device_set), shipped in
  ``microkernel/data/deepbench_inference_device.csv``. ``scale`` divides every
  dimension above 256 by that factor (>= 1) to shorten runs; 1 is the real set. Shapes
  that coincide once scaled (at ``scale`` 8, 3072x1500x1024 and 3072x1500x128 both give
  384x187x128) are kept once, the first of them (:func:`merged` names them).
* ``square``: n x n x n for the given sizes (a size given twice is kept once).
* ``minilm``: the GEMMs of one MiniLM-L6 encoder layer on the model's real weights
  (see :mod:`microkernel.minilm`).
"""
from __future__ import annotations

import collections
import csv
import dataclasses
import importlib.resources

__all__ = ["Problem", "deepbench", "square", "load", "unique", "repeats", "merged"]


@dataclasses.dataclass(frozen=True)
class Problem:
    """C(m x n) = A(m x k) @ B(k x n); a_t/b_t: the operand is a transposed view."""
    m: int
    n: int
    k: int
    a_t: bool = False
    b_t: bool = False
    #: optional callable () -> (A, B) giving real operands (e.g. model weights)
    source: object = dataclasses.field(default=None, compare=False, repr=False)
    name: str = dataclasses.field(default="", compare=False)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def label(self) -> str:
        t = ("T" if self.a_t else "N") + ("T" if self.b_t else "N")
        shape = f"{self.m}x{self.n}x{self.k}" + ("" if t == "NN" else f"_{t}")
        return f"{self.name}:{shape}" if self.name else shape

    def operands(self, rng):
        """float32 (A, B): the real operands when the problem has a source, else random
        ones in this problem's layout."""
        import numpy as np
        if self.source is not None:
            return self.source()
        a = rng.standard_normal((self.k, self.m) if self.a_t else (self.m, self.k), dtype=np.float32)
        b = rng.standard_normal((self.n, self.k) if self.b_t else (self.k, self.n), dtype=np.float32)
        return (a.T if self.a_t else a), (b.T if self.b_t else b)


def unique(problems) -> list[Problem]:
    """``problems`` without repeats, in order, the first of each kept. Problems repeat
    when their labels do: a label is what the timing engine keys its samples by, and
    the problems carry no weight or count to merge."""
    seen, out = set(), []
    for p in problems:
        if p.label not in seen:
            seen.add(p.label)
            out.append(p)
    return out


def repeats(problems) -> dict[str, int]:
    """Label -> how many of ``problems`` have it, for the labels given more than once
    (what :func:`unique` merges)."""
    count = collections.Counter(p.label for p in problems)
    return {label: n for label, n in count.items() if n > 1}


def deepbench(scale: int = 1, *, merge: bool = True) -> list[Problem]:
    """The DeepBench inference (device) GEMM shapes; see the module docstring.
    ``merge=False``: every row of the set, scaled, repeats included."""
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    text = importlib.resources.files("microkernel.data").joinpath(
        "deepbench_inference_device.csv").read_text()
    rows = [r for r in csv.reader(line for line in text.splitlines()
                                  if line and not line.startswith("#"))]
    out = []
    for r in rows[1:]:
        m, n, k, at, bt = (int(x) for x in r)
        if scale > 1:
            m, n, k = (x // scale if x > 256 else x for x in (m, n, k))
        out.append(Problem(m, n, k, bool(at), bool(bt)))
    return unique(out) if merge else out


def square(sizes=(256, 512, 1024)) -> list[Problem]:
    """n x n x n for each of ``sizes``, a repeated size once."""
    return unique(Problem(s, s, s) for s in sizes)


def merged(name: str, scale: int = 1) -> dict[str, int]:
    """The shapes of workload ``name`` that several of its shapes become at ``scale``
    (label -> how many), each of which :func:`load` gives once."""
    return repeats(deepbench(scale, merge=False)) if name == "deepbench" else {}


def load(name: str, scale: int = 1) -> list[Problem]:
    """A workload by name: 'deepbench', 'square' or 'minilm'."""
    if name == "deepbench":
        return deepbench(scale)
    if name == "square":
        return square()
    if name == "minilm":
        from .minilm import problems
        return problems()
    raise ValueError(f"unknown workload {name!r}; choose deepbench, square or minilm")
