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
           "check_memory", "run_source_child", "in_source_child", "SOURCE_CHILD_ENV",
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
    if not str(path):
        raise UsageError(f"{flag} '': give a file name")
    p = pathlib.Path(path)
    parent = p.parent if str(p.parent) else pathlib.Path(".")
    if p.is_dir():
        raise UsageError(f"{flag} {path}: is a directory; give a file name")
    if parent.exists() and not parent.is_dir():
        raise UsageError(f"{flag} {path}: {str(parent)!r} is a file, not a directory")
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: directory {str(parent)!r} does not exist")
    try:     # a file created and removed there: what access() says is not enough (/proc)
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{p.name}.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write in {str(parent)!r} "
                         f"({exc.strerror or exc})") from None
    return p


def need_matplotlib(flag: str = "--plot") -> None:
    """Raise UsageError, with the pip command, when matplotlib is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError(f"{flag} needs matplotlib, which is not installed: "
                         f"{sys.executable} -m pip install matplotlib "
                         f"(or install microkernel with the [real] extra)")


def check_threads(threads, flag: str = "--threads") -> None:
    """Refuse a thread count past :func:`microkernel.threads.max_threads` and a bad
    ``$MICROKERNEL_NUM_THREADS`` (UsageError, before any timing); warn on stderr when
    a count exceeds the CPUs this process may use."""
    from ..threads import available_cpus, check_count, default_threads
    cpus = available_cpus()
    try:
        default_threads()
        for t in ([threads] if isinstance(threads, int) else threads):
            check_count(t, flag)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for t in ([threads] if isinstance(threads, int) else threads):
        if t > cpus:
            print(f"warning: {flag} {t} is more than the {cpus} CPU(s) this process may "
                  f"run on; threads will share cores and the timings say little",
                  file=sys.stderr)


def available_memory() -> int:
    """Bytes of memory this machine can still give: MemAvailable of /proc/meminfo on
    Linux, else the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(problems, what: str) -> None:
    """Refuse (UsageError, before anything is built or timed) shapes whose operands do
    not fit: the largest problem's float32 A, B and C and its float64 reference C
    against :func:`available_memory`. ``what`` names the option (e.g. ``--sizes``)."""
    if not problems:
        return
    p = max(problems, key=lambda q: q.m * q.k + q.k * q.n + 3 * q.m * q.n)
    need = 4 * (p.m * p.k + p.k * p.n + p.m * p.n) + 8 * p.m * p.n
    have = available_memory()
    if need > have:
        gib = 1 << 30
        raise UsageError(f"{what}: the operands of {p.m}x{p.n}x{p.k} (A, B, C and C's "
                         f"float64 reference) need {need / gib:,.1f} GiB, more than the "
                         f"{have / gib:,.1f} GiB this machine has available")


def json_arg(text: str) -> pathlib.Path:
    """argparse type of a bench script's ``--json PATH``: :func:`output_path`'s checks
    (a file name in a directory that exists and is writable), as an argparse error
    (exit 2) before any work; :func:`write_json` writes it at the end."""
    try:
        return output_path("--json", text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def write_json(path: pathlib.Path, data) -> None:
    """``data`` as JSON at ``path``, through a temporary file renamed into place.
    Raises OSError naming ``path`` (not the temporary file) when it cannot be written."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write {path}: {exc.strerror}") from None
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


#: set in the child process that first runs a user's micro-kernel (run_source_child)
SOURCE_CHILD_ENV = "MICROKERNEL_SOURCE_CHILD"
#: seconds a user's micro-kernel may take over the edge catalogue in that child
SOURCE_CHILD_TIMEOUT = 300.0


def in_source_child() -> bool:
    """True in the child process of :func:`run_source_child`."""
    return os.environ.get(SOURCE_CHILD_ENV) == "1"


def run_source_child(argv, label: str, con, *, capture: bool, timeout: float | None = None):
    """``python -m microkernel *argv`` in a child process: the first run of a user's C
    micro-kernel (``label``, NAME@SOURCE), so that a crash or an endless loop in it ends
    with a message here rather than killing this process. Returns the child's
    CompletedProcess (stdout and stderr captured with ``capture``), or None after
    printing what happened when the child died of a signal or ran past ``timeout``
    (default :data:`SOURCE_CHILD_TIMEOUT`)."""
    import signal
    import subprocess
    timeout = SOURCE_CHILD_TIMEOUT if timeout is None else timeout
    env = dict(os.environ, **{SOURCE_CHILD_ENV: "1"})
    cmd = [sys.executable, "-m", "microkernel", *argv]
    try:
        res = subprocess.run(cmd, env=env, capture_output=capture, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        con.print(f"[red]{label}[/red]: the edge catalogue did not finish in {timeout:.0f} s "
                  f"(run in a child process): does the micro-kernel loop forever?")
        return None
    if res.returncode < 0:
        try:
            sig = signal.Signals(-res.returncode).name
        except ValueError:
            sig = f"signal {-res.returncode}"
        con.print(f"[red]{label}[/red]: the micro-kernel crashed ({sig}) on the edge "
                  f"catalogue, which ran in a child process; look for reads or writes past "
                  f"its panels or its C tile (c_src/mk_ukernel.h has the contract)")
        return None
    return res


def sources_pass_catalogue(kernels, con) -> bool:
    """Correct before fast: each of ``kernels`` built from a user's C file (``@SOURCE``)
    runs the whole edge catalogue first, in a child process (:func:`run_source_child`:
    a crash or a hang of the user's code is reported, not suffered, and the child's
    verdict stands); False (after printing the first failure of the first that fails)
    when one fails, so that the caller exits 1 before timing anything."""
    from .. import validate
    for k in kernels:
        if k.source is None:
            continue
        if not in_source_child():
            con.print(f"{k.label}: edge catalogue (in a child process) ...")
            res = run_source_child(["validate", "--kernel", k.spec.name, "--source",
                                    str(k.source), "--json"], k.label, con, capture=True)
            if res is None:
                return False
            try:
                rep = json.loads(res.stdout)[0] if res.returncode in (0, 1) else None
            except (ValueError, IndexError, KeyError):
                rep = None
            if rep is None:
                con.print(f"[red]{k.label}[/red]: the catalogue's child process failed "
                          f"(exit {res.returncode}): {res.stderr.strip()[-600:]}")
                return False
            if rep["failed"]:
                f = rep["failures"][0]
                con.print(f"[red]{k.label}[/red]: {rep['failed']} edge-catalogue case(s) "
                          f"failed, first {f['case']}: {f['detail']}")
                return False
            con.print(f"{k.label}: edge catalogue passed")
            continue
        bad = [r for r in validate.run_catalogue(k) if not r.ok]
        if bad:
            con.print(f"[red]{k.label}[/red]: {len(bad)} edge-catalogue case(s) failed, "
                      f"first {bad[0].case.label}: {bad[0].detail}")
            return False
        con.print(f"{k.label}: edge catalogue passed")
    return True
