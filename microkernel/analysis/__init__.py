"""Reading compiled micro-kernels: the CPU side of ``ptxas -v`` and ``cuobjdump -sass``.

``microkernel asm NAME`` (:mod:`microkernel.commands.asm`) compiles a tile's
micro-kernel without importing it, disassembles ``mk_ukernel_<name>``, finds the
inner K loop and counts what one iteration and one k step do, predicts cycles with
llvm-mca, and, where this CPU runs the ISA, measures them. x86-64 (Intel syntax) and
aarch64 (A64, through the cross compiler) alike, so ``asm neon_8x12`` and ``asm
sve_8x2v`` work on an x86 machine.

Modules, one job each:

* :mod:`.disasm`: build the object, run objdump, parse listings into
  :class:`Instruction` s;
* :mod:`.loops`: the control-flow loop finder and the per-iteration / per-k counts
  (:class:`LoopInfo`);
* :mod:`.llvm_mca`: the llvm-mca driver (:class:`McaInfo`), its ``-mcpu`` defaults and
  the FMA self-check of the scheduling model;
* :mod:`.measured`: cycles per k derived from the FMA peak, on the timing engine
  (:class:`Measured`);
* :mod:`.reporting`: everything together as one JSON-serialisable dict (:func:`report`).

The modules that hold :func:`mca`, :func:`measure` and :func:`report` are named apart
from them (``llvm_mca``, ``measured``, ``reporting``), so that no function shadows a
module of this package.
"""
from __future__ import annotations

from .disasm import (A64_ISAS, SYNTAX, SYNTAXES, X86_ISAS, Instruction, arch_of, disassemble,
                     disassemble_object, host_arch, object_path, parse)
from .loops import LoopInfo, all_loops, count, find_loops, inner_loop, loop_of, spills
from .llvm_mca import McaInfo, checked_mcpu, default_mcpu, mca, mca_fma_rate
from .measured import Measured, measure
from .reporting import report

__all__ = [
    "Instruction", "LoopInfo", "McaInfo", "Measured", "disassemble", "disassemble_object",
    "parse", "object_path", "arch_of", "host_arch", "find_loops", "all_loops", "count",
    "inner_loop", "loop_of", "spills", "mca",
    "default_mcpu", "checked_mcpu", "mca_fma_rate", "measure", "report", "SYNTAX",
    "SYNTAXES", "X86_ISAS", "A64_ISAS",
]
