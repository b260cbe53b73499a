"""Compile C through cffi into a content-addressed cache, safely, and load it.

:func:`load_module` takes a cffi ``cdef`` and C source, names the extension module by
a SHA-256 of everything that affects the binary (cdef, source, the headers it
includes, flags, compiler identity, cffi version, Python ABI tag), and

* returns the already-imported module if this process has it;
* else imports it from the cache directory if a verified copy is there;
* else builds it: cffi writes the C glue (``FFI.emit_c_code``), the compiler builds
  the shared object in a private temporary directory, and ``os.replace`` moves it
  into the cache atomically, under a process-wide lock and a file lock
  (``filelock``) so that threads and processes compiling the same module build it
  once. A loaded module is never overwritten (new content means a new name).

We drive the compiler ourselves rather than through ``FFI.compile`` because
``FFI.compile`` changes the working directory and ``os.environ`` (not thread-safe)
and hides the compiler's message; the glue is still cffi's.

Cache directory: ``$MICROKERNEL_CACHE_DIR``, else ``platformdirs.user_cache_dir
("microkernel")``. Each entry has a ``.sha256`` sidecar; an entry whose bytes do not
match it (truncated or corrupted) is rebuilt.
"""
from __future__ import annotations

import contextlib
import functools
import io
import hashlib
import importlib.machinery
import importlib.util
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading

import cffi

__all__ = ["BuildError", "build_module", "load_module", "cache_dir", "cached_file", "c_src_dir", "compiler", "BUILD_COUNT",
           "DRIVER_FILES"]

# Read once at import: on Python 3.11 sysconfig.get_config_var() is not thread-safe
# on its first call (a racing thread can see None), which would change the hash.
_PY_INCLUDE = sysconfig.get_paths()["include"]
_EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ""
_PLATFORM = sysconfig.get_platform()
_CONFIG_CC = sysconfig.get_config_var("CC")

_LOCK = threading.RLock()
_LOADED: dict[str, object] = {}
#: number of modules this process compiled (tests use it to prove "one build")
BUILD_COUNT = [0]


class BuildError(RuntimeError):
    """The C compiler is missing or rejected a module; the message holds the command
    and the compiler's own output."""


#: The files of the one GEMM driver, relative to :func:`c_src_dir`: driver.c, the parts
#: it includes (each one job: workspace, packing, loops, GEMV, team, C-stationary loops,
#: slices), the headers they include, and mk_convert.h (the typed modules' conversions,
#: included before driver.c by codegen.module_defines). Their bytes enter the hash of every module that
#: includes driver.c (kernel.py, the aarch64 harness, bench/driver_ab.py), so an edit to
#: any of them rebuilds; tests/test_build.py checks that the list is driver.c's closure.
DRIVER_FILES = ("driver.c", "mk_ukernel.h", "mk_pool.h", "mk_convert.h", "mk_workspace.h",
                "mk_pack.h", "mk_loops.h", "mk_gemv.h", "mk_trace.h", "mk_team.h",
                "mk_cstat.h", "mk_slices.h")


def c_src_dir() -> pathlib.Path:
    """The directory holding driver.c, timing.c, mk_ukernel.h, probe.c, ukernels/."""
    here = pathlib.Path(__file__).resolve().parent
    for cand in (here / "_c_src", here.parent / "c_src"):
        if (cand / "driver.c").exists():
            return cand
    raise BuildError(f"C sources not found next to {here} (expected c_src/driver.c)")


def cache_dir() -> pathlib.Path:
    """Where compiled modules live (created on first use). Raises OSError naming
    ``$MICROKERNEL_CACHE_DIR`` (or the per-user directory) when it cannot be created or
    written."""
    env = os.environ.get("MICROKERNEL_CACHE_DIR")
    if env:
        path = pathlib.Path(env).expanduser()
    else:
        import platformdirs
        path = pathlib.Path(platformdirs.user_cache_dir("microkernel"))
    try:
        if path.exists() and not path.is_dir():
            raise NotADirectoryError(f"not a directory: {path}")
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(f"not writable: {path}")
    except OSError as exc:
        where = "$MICROKERNEL_CACHE_DIR" if env else "the per-user cache directory"
        raise OSError(f"{where} ({path}) is not a usable directory for compiled kernels: "
                      f"{exc.strerror or exc}; set MICROKERNEL_CACHE_DIR to a writable "
                      "directory") from None
    return path


def cached_file(dest: pathlib.Path, make) -> pathlib.Path:
    """dest, made once (its name carries the hash of what it is made from): when it
    does not exist, ``make(tmp)`` writes it in a fresh temporary directory ``tmp`` (a
    Path beside dest) and returns the file's path, which replaces dest atomically;
    a file lock makes threads and processes making the same dest wait for one. Creates
    dest's directory; returns dest."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        return dest
    import filelock
    with filelock.FileLock(str(dest) + ".lock"):
        if dest.exists():
            return dest
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".build-") as tmp:
            os.replace(make(pathlib.Path(tmp)), dest)
    return dest


def compiler() -> list[str]:
    """The C compiler command: ``$CC``, else the one Python was built with, else gcc."""
    cc = os.environ.get("CC") or _CONFIG_CC or "gcc"
    return shlex.split(cc)


@functools.lru_cache(maxsize=None)
def _compiler_identity(cc: tuple[str, ...]) -> str:
    exe = shutil.which(cc[0])
    if exe is None:
        raise BuildError(f"C compiler {cc[0]!r} not found on PATH: install one "
                         f"(Debian/Ubuntu: apt-get install gcc) or set CC")
    out = subprocess.run([*cc, "--version"], capture_output=True, text=True)
    return exe + "\n" + out.stdout.splitlines()[0] if out.stdout else exe


def _sha256_file(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _import(modname: str, path: pathlib.Path):
    loader = importlib.machinery.ExtensionFileLoader(modname, str(path))
    spec = importlib.util.spec_from_file_location(modname, str(path), loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def _verified(path: pathlib.Path) -> bool:
    side = path.with_name(path.name + ".sha256")
    try:
        return side.read_text().strip() == _sha256_file(path)
    except OSError:
        return False


def _compile(modname: str, cdef: str, source: str, cflags, include_dirs, ldflags,
             dest: pathlib.Path) -> None:
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source(modname, source)
    cc = compiler()
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".build-") as tmp:
        c_file = pathlib.Path(tmp) / f"{modname}.c"
        so_file = pathlib.Path(tmp) / dest.name
        with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating ..."
            ffi.emit_c_code(str(c_file))
        cmd = [*cc, "-shared", "-fPIC", "-O2", "-std=gnu11",
               f"-I{_PY_INCLUDE}",
               *(f"-I{d}" for d in include_dirs), *cflags,
               str(c_file), "-o", str(so_file), *ldflags]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True)
        except FileNotFoundError as exc:
            raise BuildError(f"C compiler {cc[0]!r} not found: {exc}") from None
        if res.returncode != 0:
            raise BuildError(f"compiling {modname} failed (exit {res.returncode}):\n"
                             f"$ {shlex.join(cmd)}\n{res.stderr.strip()}")
        digest = _sha256_file(so_file)
        side_tmp = pathlib.Path(tmp) / "sidecar"
        side_tmp.write_text(digest + "\n")
        os.replace(so_file, dest)
        os.replace(side_tmp, dest.with_name(dest.name + ".sha256"))
        BUILD_COUNT[0] += 1


def build_module(name: str, cdef: str, source: str, *, cflags=(), include_dirs=(),
                 ldflags=(), depends=()) -> tuple[str, pathlib.Path]:
    """Build (once) a cffi extension module into the cache WITHOUT importing it;
    return (module name, path of the shared object). Safe for an ISA this CPU
    cannot run (nothing of it executes). Arguments as for :func:`load_module`."""
    h = hashlib.sha256()
    for part in (cdef, source, "\0".join(cflags), "\0".join(map(str, ldflags)),
                 _compiler_identity(tuple(compiler())), cffi.__version__,
                 sys.implementation.cache_tag, _EXT_SUFFIX, _PLATFORM):
        h.update(part.encode() + b"\0")
    for dep in depends:
        h.update(pathlib.Path(dep).read_bytes() + b"\0")
    modname = f"_mk_{name}_{h.hexdigest()[:20]}"
    dest = cache_dir() / f"{modname}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    with _LOCK:
        if modname not in _LOADED and not (dest.exists() and _verified(dest)):
            import filelock
            with filelock.FileLock(str(dest) + ".lock"):
                if not (dest.exists() and _verified(dest)):
                    _compile(modname, cdef, source, cflags, include_dirs, ldflags, dest)
    return modname, dest


def load_module(name: str, cdef: str, source: str, *, cflags=(), include_dirs=(),
                ldflags=(), depends=()):
    """Build (once) and import a cffi extension module; return it (``.lib``, ``.ffi``).

    Parameters
    ----------
    name : str
        Readable prefix of the module name (``avx512_8x16``); the content hash is
        appended.
    cdef, source : str
        cffi declarations and the C source (API/out-of-line mode).
    cflags, ldflags : sequence of str
        Flags for this module only (an ISA's flags never reach another module).
    include_dirs : sequence of path
        ``-I`` directories. ``depends`` lists files whose bytes enter the hash
        (the headers and .c files ``source`` includes).

    Raises
    ------
    BuildError
        No compiler, the compiler failed (its message is included), or the module
        does not import (an undefined symbol).
    """
    modname, dest = build_module(name, cdef, source, cflags=cflags, include_dirs=include_dirs,
                                 ldflags=ldflags, depends=depends)
    with _LOCK:
        if modname not in _LOADED:
            try:
                _LOADED[modname] = _import(modname, dest)
            except ImportError as exc:   # e.g. a symbol declared but never defined
                raise BuildError(f"{name}: the compiled module does not load: {exc}") from None
        return _LOADED[modname]
