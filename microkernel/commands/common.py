"""What every command shares: the console, argument types that name the argument
they reject, output paths checked before the work starts, progress lines."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

from rich.console import Console

__all__ = ["blocking_arg", "console", "positive_int", "positive_ints", "positive_ints_or_none", "csv", "nonneg_float", "positive_float",
           "fraction", "output_path", "need_matplotlib", "check_threads", "Progress",
           "write_json", "UsageError", "python_command", "sources_pass_catalogue"]


class UsageError(ValueError):
    """A bad argument, found before any work: the CLI prints it and exits 2."""


def console(stderr: bool = False, width: int = 100) -> Console:
    """A rich console at least ``width`` columns wide (tables are laid out for 100),
    wider where the terminal is."""
    cols = shutil.get_terminal_size((100, 24)).columns
    return Console(highlight=False, width=max(cols, width), stderr=stderr)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v}")
    return v


def positive_ints(text: str) -> list[int]:
    """argparse type: comma-separated integers >= 1 (``4,6,8``)."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            v = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated positive integers, got {text!r}") from None
        if v < 1:
            raise argparse.ArgumentTypeError(f"values must be positive integers, got {v}")
        out.append(v)
    if not out:
        raise argparse.ArgumentTypeError(f"expected at least one positive integer, got {text!r}")
    return out


def positive_ints_or_none(text: str) -> list[int]:
    """argparse type: as :func:`positive_ints`, but an empty value means none (``[]``)."""
    return positive_ints(text) if text.replace(",", "").strip() else []


def csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def nonneg_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (v == v and v != float("inf") and v >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return v


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (v == v and v != float("inf") and v > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return v


def fraction(text: str) -> float:
    """argparse type: a fraction in [0, 0.5), or a percentage such as ``3%``."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.03 or 3%, got {text!r}") from None
    if not 0 <= v < 0.5:
        raise argparse.ArgumentTypeError(f"must be in [0, 0.5) (0 to 50%), got {text!r}")
    return v


def output_path(flag: str, path) -> pathlib.Path | None:
    """``path`` as a Path after checking that its directory exists and is writable
    (before any long work); None stays None. Raises UsageError naming ``flag``."""
    if path is None:
        return None
    if str(path) == "-":
        raise UsageError(f"{flag} -: give a file name (the tables go to standard output; "
                         f"a file named '-' would be written)")
    p = pathlib.Path(path)
    parent = p.parent if str(p.parent) else pathlib.Path(".")
    if p.is_dir():
        raise UsageError(f"{flag} {path}: is a directory; give a file name")
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {path}: directory {str(parent)!r} is not writable")
    return p


def need_matplotlib(flag: str = "--plot") -> None:
    """Raise UsageError, with the pip command, when matplotlib is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError(f"{flag} needs matplotlib, which is not installed: "
                         f"{sys.executable} -m pip install matplotlib "
                         f"(or install microkernel with the [real] extra)")


def check_threads(threads, flag: str = "--threads") -> None:
    """Warn on stderr when a thread count exceeds the CPUs this process may use."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    for t in ([threads] if isinstance(threads, int) else threads):
        if t > cpus:
            print(f"warning: {flag} {t} is more than the {cpus} CPU(s) this process may "
                  f"run on; threads will share cores and the timings say little",
                  file=sys.stderr)


def write_json(path: pathlib.Path, data) -> None:
    """``data`` as JSON at ``path``, through a temporary file renamed into place."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)     # an ordinary file's mode, not mkstemp's 0600
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def python_command() -> str:
    """The command that runs this package with this interpreter, quoted for a shell:
    ``/path/to/.venv/bin/python -m microkernel`` (runs as printed, venv or not)."""
    import shlex
    return f"{shlex.quote(sys.executable)} -m microkernel"


class Progress:
    """Progress of a long command on stderr: a transient status line on a terminal;
    plain lines ``[  12.3 s] text`` otherwise (a log, CI, a pipe), so that a run of
    minutes is never silent."""

    def __init__(self, enabled: bool = True):
        self.t0 = time.perf_counter()
        self.enabled = enabled
        self.con = Console(stderr=True, highlight=False)
        self.status = None
        self.tty = self.con.is_terminal

    def __call__(self, text: str) -> None:
        if not self.enabled:
            return
        line = f"[{time.perf_counter() - self.t0:6.1f} s] {text}"
        if self.tty:
            if self.status is None:
                self.status = self.con.status(line)
                self.status.start()
            else:
                self.status.update(line)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_BLOCKING_ITEM = re.compile(r"(kc|mc|nc|chunks|parts)=\+?([0-9]+)", re.ASCII)


def blocking_arg(text: str) -> dict[str, int]:
    """argparse type: ``"kc=384,mc=96"`` -> ``{"kc": 384, "mc": 96}`` (any of kc, mc,
    nc, each once, in elements; ``chunks``, a team's units per thread, 0: fixed
    shares; ``parts``, the parts of each B block's columns the team's units split)."""
    out = {}
    for part in csv(text):
        item = _BLOCKING_ITEM.fullmatch(part.replace(" ", "").lower())
        if not item or item[1] in out:
            out = {}
            break
        out[item[1]] = int(item[2])
    if not out:
        raise argparse.ArgumentTypeError(
            f"expected kc=N,mc=N,nc=N[,chunks=N,parts=N] (any of them, each once; kc, mc, nc in "
            f"elements), got {text!r}")
    return out


def sources_pass_catalogue(kernels, con) -> bool:
    """Correct before fast: each of ``kernels`` built from a user's C file (``@SOURCE``)
    runs the whole edge catalogue first; False (after printing the first failure of the
    first that fails) when one fails, so that the caller exits 1 before timing anything."""
    from .. import validate
    for k in kernels:
        if k.source is None:
            continue
        bad = [r for r in validate.run_catalogue(k) if not r.ok]
        if bad:
            con.print(f"[red]{k.label}[/red]: {len(bad)} edge-catalogue case(s) failed, "
                      f"first {bad[0].case.label}: {bad[0].detail}")
            return False
        con.print(f"{k.label}: edge catalogue passed")
    return True
