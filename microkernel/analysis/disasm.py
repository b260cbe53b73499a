"""Disassembly: build a tile's object without importing it, run objdump, parse the
listing into :class:`Instruction` s.

Two architectures, each in the syntax its reference manual uses:

* **x86-64**, Intel syntax (objdump ``-M intel``; Intel SDM vol. 2): the tile's kernel
  module is built with :func:`microkernel.kernel.compile_only` (the host compiler,
  cached, never imported), so any x86 ISA can be read on any x86-64 host;
* **aarch64**, the A64 syntax of the Arm ARM (objdump's only one): the generated
  micro-kernel alone (:func:`microkernel.codegen.generate`) is compiled with the
  aarch64 cross compiler (``aarch64-linux-gnu-gcc``; the native gcc on an aarch64
  host) and the flags an Arm host's kernel module gets (``-O2 -std=gnu11``,
  :data:`microkernel.kernel.COMMON_CFLAGS`, the ISA's ``cflags``, ``-fPIC``) into an
  object cached by a SHA-256 of compiler identity, flags and source
  (``build.cache_dir()/asm``), and read with ``aarch64-linux-gnu-objdump``.

Only the micro-kernel ``mk_ukernel_<name>`` is disassembled (``--disassemble=SYM``,
``--no-show-raw-insn``, ``-w``; binutils' objdump manual).

Errors: :class:`microkernel.cross.CrossToolsMissing` (no aarch64 compiler or
objdump; names the Debian packages gcc-aarch64-linux-gnu and
binutils-aarch64-linux-gnu), :class:`NotImplementedError` (an x86 ISA on a host that
is not x86-64), RuntimeError (objdump failed, symbol missing),
:class:`microkernel.build.BuildError` / :class:`microkernel.cross.CrossError` (the
compiler rejected the source).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib
import platform
import re
import shlex
import shutil
import subprocess

from ..kernel import COMMON_CFLAGS
from ..tile import ISAS, TileSpec

__all__ = ["Instruction", "parse", "disassemble", "disassemble_object", "object_path", "arch_of", "host_arch",
           "SYNTAX", "SYNTAXES", "X86_ISAS", "A64_ISAS", "A64_CFLAGS"]

#: the assembly syntax of every x86 listing this package prints or parses
SYNTAX = "intel"
#: per architecture: the syntax of its listings ("a64": the Arm ARM's)
SYNTAXES = {"x86_64": "intel", "aarch64": "a64"}
#: ISAs whose kernels are x86-64 code
X86_ISAS = tuple(isa for isa, info in ISAS.items() if info.arch in ("x86_64", "any"))
#: ISAs whose kernels are aarch64 code (the fp32 ones and the typed ones of issue 22)
A64_ISAS = tuple(isa for isa, info in ISAS.items() if info.arch == "aarch64")
#: flags of an aarch64 object besides the ISA's own, as an Arm host builds the kernel
#: module: build.py's "-O2 -std=gnu11", kernel.COMMON_CFLAGS (-O3 ..), -fPIC
A64_CFLAGS = ("-O2", "-std=gnu11", *COMMON_CFLAGS, "-fPIC")

_PREFIXES = {"lock", "rep", "repz", "repe", "repnz", "repne", "data16", "addr32",
             "notrack", "bnd", "cs", "ds", "es", "ss", "fs", "gs", "xacquire", "xrelease"}
# Intel-syntax memory operand: optional size + PTR/BCST, optional segment, [..]
_MEM_RE = re.compile(
    r"(?:(?P<size>BYTE|WORD|DWORD|QWORD|TBYTE|XMMWORD|YMMWORD|ZMMWORD|OWORD)\s+"
    r"(?P<kind>PTR|BCST)\s+)?(?:[a-z]s:)?\[(?P<addr>[^\]]*)\](?P<att_bcst>\{1to\d+\})?",
    re.IGNORECASE)
_VREG_RE = re.compile(r"\b([xyzt]mm\d+)\b")   # tmm: AMX tile registers
# A64 SIMD&FP and SVE registers: v0-v31 (q/d/s/h/b views), z0-z31
_A64_VREG_RE = re.compile(r"\b([vqdshbz])([0-9]|[12][0-9]|3[01])\b")
_SIZE_BYTES = {"byte": 1, "word": 2, "dword": 4, "qword": 8, "tbyte": 10,
               "xmmword": 16, "oword": 16, "ymmword": 32, "zmmword": 64}
_NO_MEMORY_ACCESS = {"lea", "nop", "prefetcht0", "prefetcht1", "prefetcht2",
                     "prefetchnta", "prefetchw"}
_X86_UNCONDITIONAL = {"jmp", "ret", "retq", "ud2", "hlt"}
# A64 branches (Arm ARM C3.1): B, B.cond, CBZ/CBNZ, TBZ/TBNZ, BR, RET; BL/BLR return
_A64_BRANCHES = {"b", "br", "ret", "retaa", "retab", "cbz", "cbnz", "tbz", "tbnz"}
_A64_UNCONDITIONAL = {"b", "br", "ret", "retaa", "retab", "udf", "brk", "hlt"}


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One disassembled instruction: its address, mnemonic (lower case; x86 prefixes
    included, "rep stos"), operands and text as objdump prints them (A64: without
    objdump's ``//`` comment), and its architecture (``x86_64`` or ``aarch64``)."""
    address: int
    mnemonic: str
    operands: str
    text: str
    arch: str = "x86_64"

    @property
    def base_mnemonic(self) -> str:
        return self.mnemonic.split()[-1]

    @property
    def is_branch(self) -> bool:
        """A jump or return (x86 ``j*``/``ret``..; A64 ``b``, ``b.cond``, ``cbz``,
        ``tbz``, ``br``, ``ret``); calls are not branches here."""
        mn = self.base_mnemonic
        if self.arch == "aarch64":
            return mn in _A64_BRANCHES or mn.startswith("b.") or mn in _A64_UNCONDITIONAL
        return mn.startswith("j") or mn in _X86_UNCONDITIONAL

    @property
    def is_unconditional(self) -> bool:
        """Control never falls through to the next instruction."""
        table = _A64_UNCONDITIONAL if self.arch == "aarch64" else _X86_UNCONDITIONAL
        return self.base_mnemonic in table

    @property
    def branch_target(self) -> int | None:
        """Target address of a direct branch (``jne 23d8 <sym+0x78>``, ``b.ne 150
        <sym+0x150>``, ``cbz x0, 1d0 <..>``, ``tbz w1, #3, 1d0 <..>``), else None."""
        mn = self.base_mnemonic
        if self.arch == "aarch64":
            if not (mn in ("b", "cbz", "cbnz", "tbz", "tbnz") or mn.startswith("b.")):
                return None
            m = re.search(r"(?:^|,\s*)([0-9a-f]+)(?:\s+<[^>]*>)?\s*$", self.operands.strip())
            return int(m.group(1), 16) if m else None
        if not mn.startswith("j"):
            return None
        m = re.match(r"^([0-9a-f]+)\b", self.operands.strip())
        return int(m.group(1), 16) if m else None

    def memory_operands(self) -> list[dict]:
        """x86 memory operands: dicts with index (operand position), size (bytes or
        None), broadcast (bool), base register and the address text. (A64 accesses:
        :func:`microkernel.analysis.counts.a64_access`.)"""
        if self.arch != "x86_64" or self.base_mnemonic in _NO_MEMORY_ACCESS:
            return []
        out = []
        for pos, op in enumerate(split_operands(self.operands)):
            m = _MEM_RE.search(op)
            if not m:
                continue
            addr = m.group("addr").strip()
            base = re.match(r"^([a-z][a-z0-9]*)", addr)
            size = m.group("size")
            out.append(dict(
                index=pos, size=_SIZE_BYTES.get(size.lower()) if size else None,
                broadcast=bool((m.group("kind") or "").upper() == "BCST"
                               or m.group("att_bcst")),
                base=base.group(1) if base else None, address=addr))
        return out

    def vector_registers(self) -> list[str]:
        """Vector registers named in the operands: x86 ``xmm3``/``ymm3``/``zmm3``;
        A64 ``v3`` for any view of SIMD&FP register 3 (q3, d3, s3, v3.4s) and ``z3``
        for SVE (the same physical register: :attr:`LoopInfo.vector_registers`
        merges them)."""
        if self.arch != "aarch64":
            return _VREG_RE.findall(self.operands)
        if self.is_branch:
            return []                      # a target such as "b0" is an address
        ops = re.sub(r"<[^>]*>", "", self.operands)
        return [("z" if p == "z" else "v") + n for p, n in _A64_VREG_RE.findall(ops)]


def split_operands(operands: str) -> list[str]:
    """Split 'a,b,c' at top-level commas (not inside [..] or {..}); drops '<sym+off>'."""
    s = re.sub(r"\s*<[^>]*>\s*$", "", operands.strip())
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


_LINE_RE = re.compile(r"^\s*([0-9a-f]+):\s+(.*\S)\s*$")


def parse(asm: str, arch: str = "x86_64") -> list[Instruction]:
    """Instructions of an objdump ``-d --no-show-raw-insn`` listing: x86-64 in Intel
    syntax (``-M intel``), or aarch64 (``arch="aarch64"``; objdump's ``// ..``
    comments are dropped, raw instruction words are skipped when present)."""
    if arch == "aarch64":
        return _parse_a64(asm)
    out = []
    for line in asm.splitlines():
        m = _LINE_RE.match(line)
        if not m:
            continue
        body = m.group(2).split("\t")[-1] if "\t" in m.group(2) else m.group(2)
        body = body.strip()
        if not body or body.startswith("(bad)") or body == "...":
            continue
        toks = body.split()
        i = 0
        while i < len(toks) - 1 and toks[i].lower() in _PREFIXES:
            i += 1
        mnemonic = " ".join(t.lower() for t in toks[:i + 1])
        operands = " ".join(toks[i + 1:])
        out.append(Instruction(int(m.group(1), 16), mnemonic, operands,
                               f"{toks[i].lower():<12} {operands}".rstrip()
                               if i == 0 else f"{mnemonic} {operands}".rstrip()))
    return out


def _parse_a64(asm: str) -> list[Instruction]:
    out = []
    for line in asm.splitlines():
        m = _LINE_RE.match(line)
        if not m:
            continue
        body = m.group(2).split("//")[0].strip()
        body = re.sub(r"^[0-9a-f]{8}\s+", "", body)          # a raw instruction word
        if not body or body.startswith(("(bad)", ".inst", ".word")) or body == "...":
            continue
        mnemonic, _, operands = body.replace("\t", " ", 1).partition(" ")
        operands = " ".join(operands.split())
        out.append(Instruction(int(m.group(1), 16), mnemonic.lower(), operands,
                               f"{mnemonic.lower():<8} {operands}".rstrip(), "aarch64"))
    return out


# -- which architecture, which tools ----------------------------------------------------

def host_arch() -> str:
    """``x86_64``, ``aarch64`` or the machine name as ``platform.machine()`` says."""
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def arch_of(spec: TileSpec) -> str:
    """The architecture ``spec``'s code is read as: its ISA's (``scalar``: the host's)."""
    arch = spec.info.arch
    return host_arch() if arch == "any" else arch


def _spec(spec: TileSpec | str) -> TileSpec:
    return TileSpec.of(spec)


def _x86_objdump() -> str:
    exe = shutil.which("objdump")
    if not exe:
        raise RuntimeError("objdump not found: install binutils to inspect kernels")
    return exe


@functools.lru_cache(maxsize=256)
def _disassemble_file(objdump: str, path: str, mtime_ns: int, symbol: str,
                      syntax: str | None) -> str:
    cmd = [objdump, "-d", "--no-show-raw-insn", *(["-M", syntax] if syntax else []), "-w",
           f"--disassemble={symbol}", path]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"objdump failed ({' '.join(cmd)}): {res.stderr.strip()}")
    lines, inside = [], False
    for line in res.stdout.splitlines():
        if re.match(rf"^[0-9a-f]+ <{re.escape(symbol)}>:\s*$", line):
            inside = True
        elif inside and re.match(r"^[0-9a-f]+ <.*>:\s*$", line):
            break                       # next symbol (objdump prints only ours, but be safe)
        if inside and line.strip():
            lines.append(line.rstrip())
    if not lines:
        raise RuntimeError(f"symbol {symbol} not found in {path}")
    return "\n".join(lines) + "\n"


def _line_directive(path) -> str:
    quoted = os.fspath(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{quoted}"\n'


def _a64_object(spec: TileSpec, source: str | None,
                source_path=None) -> pathlib.Path:
    """Cross-compile the micro-kernel of ``spec`` (or ``source``, C text replacing the
    generated one, read from ``source_path``: errors are reported at that file's
    lines) into a cached object; returns its path."""
    from .. import build, codegen
    from ..cross.tools import CrossError, find_asm_tools
    tools = find_asm_tools()
    text = codegen.generate(spec) if source is None else source
    if source is not None and source_path is not None:
        text = _line_directive(source_path) + text
    src_dir = build.c_src_dir()
    flags = (*A64_CFLAGS, *spec.cflags)
    h = hashlib.sha256()
    for part in (tools.cc, tools.cc_version, "\0".join(flags), text,
                 (src_dir / "mk_ukernel.h").read_text()):
        h.update(part.encode() + b"\0")
    stem = spec.name if source is None else f"{spec.name}_src"

    def make(tmp: pathlib.Path) -> pathlib.Path:
        c_file = tmp / f"{stem}.c"
        c_file.write_text(text)
        obj = tmp / "k.o"
        cmd = [tools.cc, *flags, f"-I{src_dir}", "-c", str(c_file), "-o", str(obj)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise CrossError(f"compiling {stem} for aarch64 failed (exit "
                             f"{res.returncode}):\n$ {shlex.join(cmd)}\n{res.stderr.strip()}")
        return obj

    return build.cached_file(build.cache_dir() / "asm" / f"{stem}-{h.hexdigest()[:20]}.o",
                             make)


def object_path(spec: TileSpec | str, source: str | None = None,
                source_path=None) -> pathlib.Path:
    """The compiled object holding ``mk_ukernel_<name>``: x86, the kernel module's
    shared object (:func:`microkernel.kernel.compile_only`); aarch64, the cached
    cross-compiled object. ``source`` (C text) replaces the generated micro-kernel;
    with ``source_path`` (the file it was read from) compile errors name that file's
    lines. Raises as the module docstring says."""
    from .. import build, kernel
    spec = _spec(spec)
    arch = arch_of(spec)
    if arch == "aarch64":
        return _a64_object(spec, source, source_path)
    if arch != "x86_64" or host_arch() != "x86_64":
        raise NotImplementedError(
            f"asm inspection reads x86-64 code ({', '.join(X86_ISAS)}) on an x86-64 host "
            f"and aarch64 code ({', '.join(A64_ISAS)}); {spec.name} is {arch} "
            f"({spec.isa}) and this host is {host_arch()}")
    if source is None:
        return pathlib.Path(kernel.compile_only(spec))
    return pathlib.Path(build.build_module(**kernel._build_args(spec, source, source_path))[1])


def disassemble_object(path, symbol: str, arch: str = "x86_64") -> str:
    """objdump listing of ``symbol`` in the object or shared object at ``path``
    (``arch``: ``x86_64``, Intel syntax, host objdump; ``aarch64``, the aarch64
    objdump of :func:`microkernel.cross.find_asm_tools`). Cached per file version.
    Raises RuntimeError (objdump failed, symbol missing), CrossToolsMissing."""
    path = os.fspath(path)
    if arch == "aarch64":
        from ..cross.tools import find_asm_tools
        objdump, syntax = find_asm_tools().objdump, None
    else:
        objdump, syntax = _x86_objdump(), SYNTAX
    return _disassemble_file(objdump, path, os.stat(path).st_mtime_ns, symbol, syntax)


def disassemble(spec: TileSpec | str, source: str | None = None, source_path=None) -> str:
    """objdump listing (no raw bytes) of ``mk_ukernel_<name>`` only: Intel syntax for
    x86-64, A64 for aarch64 (see the module docstring for the build). ``source``
    replaces the generated micro-kernel (C text defining the same symbol), read from
    ``source_path`` if given (see :func:`object_path`)."""
    from .. import codegen
    spec = _spec(spec)
    return disassemble_object(object_path(spec, source, source_path), codegen.symbol(spec),
                              arch_of(spec))
