"""``microkernel`` command line: one module per command in :mod:`microkernel.commands`.

    probe | list | validate | bench | compare | sweep | template | asm | cross | port

Each command that prints results takes ``--json``. Exit status: 0 on success, 1 when
a validation fails, 2 on bad usage or an unavailable ISA/tool. The module behind a
command is imported only when that command runs, so ``microkernel probe`` stays light.
"""
from __future__ import annotations

import argparse
import importlib
import sys

#: command -> its help line; the command NAME is the module microkernel.commands.NAME, which
#: has add_arguments(parser) and run(args) -> exit status
COMMANDS = {
    "probe": "what this CPU and OS can run, caches, blocking",
    "list": "built-in tiles and whether they run here",
    "validate": "run the edge catalogue against numpy (float64)",
    "bench": "FMA peak, micro-kernels in L1, gemm() against numpy and other peers",
    "compare": "time tiles (and peers) against each other round by round",
    "sweep": "generate, compile, validate and rank tile shapes on real GEMM shapes",
    "template": "write a commented C micro-kernel to start your own from",
    "asm": "inner K loop disassembly, FMA/load/spill counts, llvm-mca cycles",
    "cross": "aarch64 NEON/SVE kernels under qemu at every vector length",
    "port": "the numba CUDA kernel from the same tile, its resource report",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported (its arguments added)."""
    parser = argparse.ArgumentParser(
        prog="microkernel",
        description="Prototype CPU SIMD GEMM micro-kernels, validate them, port the tile to CUDA.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_ in COMMANDS.items():
        p = sub.add_parser(name, help=help_)
        if command != name:
            continue
        try:
            mod = importlib.import_module(f"microkernel.commands.{name}")
        except ImportError as exc:
            msg = str(exc)
            # --help says so too (the parser has none of the command's options)
            p.description = f"unavailable here ({msg}): install the package's dependencies"
            p.set_defaults(func=lambda a, msg=msg, name=name: _missing(name, msg),
                           unavailable=msg)
            continue
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
    return parser


#: the packages the command line needs (pyproject.toml's dependencies), by import name
DEPENDENCIES = ("numpy", "cffi", "rich", "platformdirs", "filelock", "threadpoolctl",
                "ml_dtypes")


def _missing(name: str, msg: str) -> int:
    print(f"microkernel {name}: unavailable here ({msg})", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    # an unavailable command has none of its options: say why, not "unrecognized"
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "unavailable", None):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        from .build import BuildError
        from .commands.common import UsageError
        from .dispatch import IsaUnavailableError
        from .tile import TileError
    except ImportError as exc:   # a source tree without the commands' dependencies (rich,
        # cffi); numpy missing reaches the commands (the package imports without it)
        print(f"microkernel: {exc}: install the package (pip install -e .) or run "
              f"scripts/setup.sh", file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"microkernel {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (IsaUnavailableError, TileError, BuildError, ValueError, OSError) as exc:
        print(f"microkernel {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:   # a dependency imported lazily by the command
        if exc.name not in DEPENDENCIES:
            raise
        print(f"microkernel {args.command}: error: {exc.name} is not installed: install "
              f"the package (pip install -e .) or run scripts/setup.sh", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
