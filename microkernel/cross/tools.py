"""Finding the aarch64 tools: the cross compiler (with its static C library for the
harness), its objdump (for ``microkernel asm``) and qemu-aarch64, and the Debian
packages that provide them.

Overrides: ``$MICROKERNEL_CROSS_CC``, ``$MICROKERNEL_CROSS_OBJDUMP``,
``$MICROKERNEL_QEMU``. On an aarch64 host the native ``gcc`` and ``objdump`` serve
:func:`find_asm_tools` when no cross tool is installed.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import platform
import re
import shutil
import subprocess

__all__ = ["CrossToolsMissing", "CrossError", "Tools", "AsmTools", "APT_PACKAGES",
           "ASM_APT_PACKAGES", "DEFAULT_CC", "DEFAULT_OBJDUMP", "DEFAULT_QEMU",
           "find_tools", "find_asm_tools"]

#: Debian/Ubuntu packages that provide the tools of ``microkernel cross``
APT_PACKAGES = ("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross", "qemu-user")
#: ... and those ``microkernel asm`` needs for an aarch64 tile (compiler, objdump)
ASM_APT_PACKAGES = ("gcc-aarch64-linux-gnu", "binutils-aarch64-linux-gnu")
DEFAULT_CC = "aarch64-linux-gnu-gcc"
DEFAULT_OBJDUMP = "aarch64-linux-gnu-objdump"
DEFAULT_QEMU = "qemu-aarch64"


class CrossToolsMissing(RuntimeError):
    """The aarch64 cross compiler, its C library, its objdump or qemu-aarch64 is
    missing; the message names the apt packages."""


class CrossError(RuntimeError):
    """Building or running the harness failed (the message holds the details)."""


def _missing(what: str, packages=APT_PACKAGES) -> CrossToolsMissing:
    return CrossToolsMissing(
        f"{what}. Install the cross tools (Debian/Ubuntu): "
        f"apt-get install {' '.join(packages)}")


def _first_line(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    return (out.splitlines() or [""])[0].strip()


@dataclasses.dataclass(frozen=True)
class Tools:
    """Paths and ``--version`` first lines of the cross compiler and qemu."""
    cc: str
    qemu: str
    cc_version: str
    qemu_version: str


def find_tools(cc: str | None = None, qemu: str | None = None) -> Tools:
    """Locate the cross compiler (with its static C library) and qemu-aarch64.

    ``$MICROKERNEL_CROSS_CC`` / ``$MICROKERNEL_QEMU`` override the defaults
    (``aarch64-linux-gnu-gcc``, ``qemu-aarch64``). Raises
    :class:`CrossToolsMissing` naming the apt packages (:data:`APT_PACKAGES`).
    """
    cc = cc or os.environ.get("MICROKERNEL_CROSS_CC") or DEFAULT_CC
    qemu = qemu or os.environ.get("MICROKERNEL_QEMU") or DEFAULT_QEMU
    cc_path, qemu_path = shutil.which(cc), shutil.which(qemu)
    if cc_path is None:
        raise _missing(f"aarch64 cross compiler {cc!r} not found on PATH")
    if qemu_path is None:
        raise _missing(f"{qemu!r} (qemu user-mode emulator) not found on PATH")
    libc = subprocess.run([cc_path, "-print-file-name=libc.a"], capture_output=True, text=True)
    libc_path = libc.stdout.strip()
    if libc.returncode != 0 or not os.path.isabs(libc_path) or not os.path.exists(libc_path):
        raise _missing(f"{cc} has no static aarch64 C library (libc.a)")
    return Tools(cc_path, qemu_path, _first_line([cc_path, "--version"]),
                 _first_line([qemu_path, "--version"]))


@functools.lru_cache(maxsize=None)
def qemu_cpus(qemu: str) -> frozenset:
    """The ``-cpu`` names ``qemu`` knows (``qemu-aarch64 -cpu help``); empty when it does
    not list them."""
    res = subprocess.run([qemu, "-cpu", "help"], capture_output=True, text=True, check=False)
    return frozenset(re.findall(r"^\s+([\w.-]+)\s*$", res.stdout, re.MULTILINE))


@dataclasses.dataclass(frozen=True)
class AsmTools:
    """An aarch64 C compiler and objdump (``microkernel asm`` of a NEON/SVE tile)."""
    cc: str
    objdump: str
    cc_version: str


def _host_is_aarch64() -> bool:
    return platform.machine().lower() in ("aarch64", "arm64")


@functools.lru_cache(maxsize=None)
def _asm_tools(cc: str | None, objdump: str | None) -> AsmTools:
    native = _host_is_aarch64()
    cc_names = [cc] if cc else [DEFAULT_CC] + (["gcc", "cc"] if native else [])
    od_names = [objdump] if objdump else [DEFAULT_OBJDUMP] + (["objdump"] if native else [])
    cc_path = next((p for p in map(shutil.which, cc_names) if p), None)
    if cc_path is None:
        raise _missing(f"aarch64 C compiler {cc_names[0]!r} not found on PATH",
                       ASM_APT_PACKAGES)
    od_path = next((p for p in map(shutil.which, od_names) if p), None)
    if od_path is None:
        raise _missing(f"aarch64 objdump {od_names[0]!r} not found on PATH",
                       ASM_APT_PACKAGES)
    return AsmTools(cc_path, od_path, _first_line([cc_path, "--version"]))


def find_asm_tools(cc: str | None = None, objdump: str | None = None) -> AsmTools:
    """Locate an aarch64 compiler and objdump: ``cc`` / ``$MICROKERNEL_CROSS_CC``
    (default ``aarch64-linux-gnu-gcc``) and ``objdump`` /
    ``$MICROKERNEL_CROSS_OBJDUMP`` (default ``aarch64-linux-gnu-objdump``); on an
    aarch64 host the native gcc and objdump too. No C library or qemu is needed.
    Raises :class:`CrossToolsMissing` naming :data:`ASM_APT_PACKAGES`."""
    return _asm_tools(cc or os.environ.get("MICROKERNEL_CROSS_CC") or None,
                      objdump or os.environ.get("MICROKERNEL_CROSS_OBJDUMP") or None)
