"""The PTX instructions numba-cuda has no API for, as intrinsics, and their
Python twins for the CUDA simulator.

numba-cuda exposes neither tensor cores nor inline PTX (numba-cuda issue 309),
but ``numba.cuda.extending.intrinsic`` lets a function emit LLVM IR, and an
``llvmlite.ir.InlineAsm`` call in that IR is any PTX instruction. On the GPU
(:func:`gpu`) each intrinsic is one inline-asm call:

==================  =========================================================
``mma(*a, *b, *c)`` ``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}...f32``
                    or ``m16n8k8 ... .tf32.tf32.f32``: 4 A registers, 2 B
                    registers, 4 fp32 C in, a 4-tuple of fp32 D out.
``ldsm_x4``         ``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` (4 registers)
``ldsm_x4_trans``   the same with ``.trans``
``cp_async16``      ``cp.async.cg.shared.global.L2::128B [dst], [src], 16, n``
                    (n < 16 source bytes: the rest of the 16 is zero-filled)
``cp_commit``       ``cp.async.commit_group``
``cp_wait(n)``      ``cp.async.wait_group n`` (a factory: n is an immediate)
``cvt_tf32``        ``cvt.rna.tf32.f32`` (round to nearest, ties away)
``lds32``           a 32-bit shared load (plain LLVM load, not asm)
==================  =========================================================

Shared-memory operands are (shared array, byte offset) pairs: the intrinsic
turns the array's generic data pointer into a 32-bit ``.shared`` address
(``addrspacecast`` to address space 3); global operands are (array, byte
offset) and use the generic 64-bit address, as CUTLASS does. Every asm call is
``side_effect=True`` (identical ``mma``/``ldmatrix`` calls must not be merged or
hoisted across a barrier) and the cp.async ones clobber ``memory``.

Under ``NUMBA_ENABLE_CUDASIM=1`` (:func:`sim`) the same names are Python
functions: ``mma`` and ``ldsm_*`` are warp collectives (the 32 simulator threads
of a warp meet at a barrier; one of them runs the numpy fragment model of
:mod:`microkernel.gpu.fragments` for all lanes), ``cp_async16`` copies at once
(commit/wait are no-ops), ``cvt_tf32`` is :func:`fragments.round_tf32`. Like the
hardware's ``.sync.aligned`` forms, a collective needs all 32 lanes of the warp:
a lane that does not arrive within :data:`SIM_TIMEOUT_S` breaks the barrier
(BrokenBarrierError) instead of hanging the test. :func:`trace` records, per
warp, the lane byte offsets of every simulated shared-memory instruction, which
is how the tests check that the kernel issues the addresses that the bank model
(:mod:`microkernel.gpu.mma_tile`) prices.
"""
from __future__ import annotations

import contextlib
import functools
import threading
import types as _pytypes
import weakref

import numpy as np

from . import fragments

__all__ = ["gpu", "sim", "trace", "SIM_TIMEOUT_S", "MMA_PTX"]

#: Seconds a simulated warp collective waits for the rest of its warp.
SIM_TIMEOUT_S = 120.0

#: precision -> the mma instruction's PTX (operands filled in by :func:`gpu`).
MMA_PTX = {k: ins.ptx for k, ins in fragments.INSTRUCTIONS.items()}


# ======================================================================================
# GPU: numba intrinsics with inline PTX
# ======================================================================================

@functools.lru_cache(maxsize=None)
def gpu() -> _pytypes.SimpleNamespace:
    """The intrinsics for real compilation (needs numba-cuda, not a GPU)."""
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
    i8p = ir.PointerType(ir.IntType(8))

    def asm(builder, ret, argtys, text, cons, args):
        fn = ir.InlineAsm(ir.FunctionType(ret, argtys), text, cons, side_effect=True)
        return builder.call(fn, args)

    def shared_addr(context, builder, aryty, ary, off):
        data = context.make_array(aryty)(context, builder, ary).data
        p3 = builder.addrspacecast(builder.bitcast(data, i8p), ir.PointerType(ir.IntType(8), 3))
        return builder.add(builder.trunc(builder.ptrtoint(p3, i64), i32), off)

    def global_addr(context, builder, aryty, ary, off):
        data = context.make_array(aryty)(context, builder, ary).data
        return builder.add(builder.ptrtoint(data, i64), off)

    def tuple_of(context, builder, sig, res, n):
        return context.make_tuple(builder, sig.return_type,
                                  [builder.extract_value(res, i) for i in range(n)])

    def make_mma(precision):
        ptx = MMA_PTX[precision] + (" {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
                                    "{$10,$11,$12,$13};")

        def mma(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
            u, f = types.uint32, types.float32
            sig = types.UniTuple(f, 4)(u, u, u, u, u, u, f, f, f, f)

            def codegen(context, builder, sig, args):
                res = asm(builder, ir.LiteralStructType([f32] * 4), [i32] * 6 + [f32] * 4,
                          ptx, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", list(args))
                return tuple_of(context, builder, sig, res, 4)
            return sig, codegen
        mma.__name__ = f"mma_{precision}"
        return intrinsic(mma)

    def make_ldsm(trans):
        text = ("ldmatrix.sync.aligned.m8n8.x4" + (".trans" if trans else "")
                + ".shared.b16 {$0,$1,$2,$3}, [$4];")

        def ldsm(typingctx, sarr, off):
            sig = types.UniTuple(types.uint32, 4)(sarr, types.uint32)

            def codegen(context, builder, sig, args):
                a = shared_addr(context, builder, sig.args[0], args[0], args[1])
                res = asm(builder, ir.LiteralStructType([i32] * 4), [i32], text,
                          "=r,=r,=r,=r,r", [a])
                return tuple_of(context, builder, sig, res, 4)
            return sig, codegen
        ldsm.__name__ = "ldsm_x4_trans" if trans else "ldsm_x4"
        return intrinsic(ldsm)

    @intrinsic
    def cp_async16(typingctx, sarr, soff, garr, goff, nbytes):
        sig = types.void(sarr, types.uint32, garr, types.uint64, types.uint32)

        def codegen(context, builder, sig, args):
            s = shared_addr(context, builder, sig.args[0], args[0], args[1])
            g = global_addr(context, builder, sig.args[2], args[2], args[3])
            asm(builder, ir.VoidType(), [i32, i64, i32],
                "cp.async.cg.shared.global.L2::128B [$0], [$1], 16, $2;",
                "r,l,r,~{memory}", [s, g, args[4]])
            return context.get_dummy_value()
        return sig, codegen

    @intrinsic
    def cp_commit(typingctx):
        def codegen(context, builder, sig, args):
            asm(builder, ir.VoidType(), [], "cp.async.commit_group;", "~{memory}", [])
            return context.get_dummy_value()
        return types.void(), codegen

    @functools.lru_cache(maxsize=None)
    def cp_wait(n: int):
        n = int(n)

        def wait(typingctx):
            def codegen(context, builder, sig, args):
                asm(builder, ir.VoidType(), [], f"cp.async.wait_group {n};", "~{memory}", [])
                return context.get_dummy_value()
            return types.void(), codegen
        wait.__name__ = f"cp_wait_{n}"
        return intrinsic(wait)

    @intrinsic
    def cvt_tf32(typingctx, x):
        sig = types.uint32(types.uint32)

        def codegen(context, builder, sig, args):
            fn = ir.InlineAsm(ir.FunctionType(i32, [i32]), "cvt.rna.tf32.f32 $0, $1;", "=r,r")
            return builder.call(fn, list(args))      # pure: may be CSE'd
        return sig, codegen

    @intrinsic
    def lds32(typingctx, sarr, off):
        sig = types.uint32(sarr, types.uint32)

        def codegen(context, builder, sig, args):
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            p = builder.gep(builder.bitcast(data, i8p), [args[1]])
            return builder.load(builder.bitcast(p, ir.PointerType(i32)), align=4)
        return sig, codegen

    return _pytypes.SimpleNamespace(
        mma={k: make_mma(k) for k in MMA_PTX}, ldsm_x4=make_ldsm(False),
        ldsm_x4_trans=make_ldsm(True), cp_async16=cp_async16, cp_commit=cp_commit,
        cp_wait=cp_wait, cvt_tf32=cvt_tf32, lds32=lds32, simulated=False)


# ======================================================================================
# Simulator: Python twins
# ======================================================================================

class _Warp:
    """The rendezvous of the 32 simulator threads of one warp."""

    def __init__(self):
        self.slots = [None] * 32
        self.results = None
        self.fn = None
        self.barrier = threading.Barrier(32, action=self._run, timeout=SIM_TIMEOUT_S)

    def _run(self):
        self.results = self.fn(self.slots)

    def collective(self, lane, value, fn):
        self.slots[lane] = value
        self.fn = fn
        self.barrier.wait()
        return self.results[lane]


_WARPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_WARPS_NO_MANAGER: dict = {}
_LOCK = threading.Lock()
_TRACE: dict | None = None
_COUNTERS: dict = {}


def _whoami():
    """(block key, warp, lane) of the calling simulator thread."""
    th = threading.current_thread()
    tid = getattr(th, "thread_id", None)
    if tid is None:
        raise RuntimeError("a simulated warp instruction was called outside a simulated "
                           "kernel")
    block = (getattr(th, "_manager", None), tuple(th.blockIdx))
    return block, tid // 32, tid % 32


def _collective(value, fn):
    block, warp, lane = _whoami()
    mgr, bidx = block
    with _LOCK:
        per = _WARPS.setdefault(mgr, {}) if mgr is not None else _WARPS_NO_MANAGER
        w = per.get((bidx, warp))
        if w is None:
            w = per[(bidx, warp)] = _Warp()
    return w.collective(lane, value, fn)


def _record(op: str, offset: int) -> None:
    """Add one lane's byte offset to the trace (when tracing)."""
    if _TRACE is None:
        return
    block, warp, lane = _whoami()
    with _LOCK:
        key = (id(block[0]), block[1], warp, op, lane)
        n = _COUNTERS.get(key, 0)
        _COUNTERS[key] = n + 1
        req = _TRACE.setdefault((block[1], warp, op, n), [None] * 32)
        req[lane] = int(offset)


@contextlib.contextmanager
def trace():
    """Record the shared-memory offsets simulated instructions use.

    Yields a dict filled on exit: ``{(blockIdx, warp, op, n): [32 lane byte
    offsets]}``, ``n`` counting that op's calls by the warp (op: ``"ldsm"``,
    ``"ldsm_trans"``, ``"cp_async16"``, ``"lds32"``)."""
    global _TRACE, _COUNTERS
    with _LOCK:
        _TRACE, _COUNTERS = {}, {}
    out: dict = {}
    try:
        yield out
    finally:
        with _LOCK:
            out.update(_TRACE)
            _TRACE, _COUNTERS = None, {}


def _raw(arr) -> np.ndarray:
    """The bytes (uint8 view) of a simulator array (numpy, FakeCUDAArray, or the
    within-kernel wrapper)."""
    a = arr
    while not isinstance(a, np.ndarray):
        if "_item" in getattr(a, "__dict__", {}):
            a = a.__dict__["_item"]
        elif hasattr(a, "_ary"):
            a = a._ary
        else:
            raise TypeError(f"not a simulator array: {type(arr).__name__}")
    if not a.flags.c_contiguous:
        raise ValueError("simulated cp.async/ldmatrix need C-contiguous arrays")
    return a.reshape(-1).view(np.uint8)


def _u32_at(mem: np.ndarray, off: int) -> int:
    if off % 4 or off < 0 or off + 4 > mem.size:
        raise IndexError(f"32-bit shared access at byte {off} (size {mem.size})")
    return int(mem[off:off + 4].view(np.uint32)[0])


def _u16_at(mem: np.ndarray, off: int) -> int:
    if off % 2 or off < 0 or off + 2 > mem.size:
        raise IndexError(f"16-bit shared access at byte {off} (size {mem.size})")
    return int(mem[off:off + 2].view(np.uint16)[0])


def _ldsm_sim(trans: bool):
    op = "ldsm_trans" if trans else "ldsm"

    def ldsm(sarr, off):
        off = int(off)
        if off % 16:
            raise ValueError(f"ldmatrix row address {off} is not 16-byte aligned")
        _record(op, off)
        mem = _raw(sarr)

        def run(addrs):
            out = []
            for lane in range(32):
                g, t = lane >> 2, lane % 4
                regs = []
                for i in range(4):
                    rows = addrs[8 * i:8 * i + 8]
                    if not trans:      # row g, 16-bit elements 2t, 2t+1
                        regs.append(np.uint32(_u32_at(mem, rows[g] + 4 * t)))
                    else:              # elements (2t, g) and (2t+1, g) of the stored rows
                        lo = _u16_at(mem, rows[2 * t] + 2 * g)
                        hi = _u16_at(mem, rows[2 * t + 1] + 2 * g)
                        regs.append(np.uint32(lo | (hi << 16)))
                out.append(tuple(regs))
            return out
        return _collective(off, run)
    ldsm.__name__ = "ldsm_x4_trans" if trans else "ldsm_x4"
    return ldsm


def _mma_sim(precision: str):
    ins = fragments.INSTRUCTIONS[precision]

    def mma(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        mine = ((a0, a1, a2, a3), (b0, b1), (c0, c1, c2, c3))

        def run(slots):
            a = np.array([s[0] for s in slots], np.uint64).astype(np.uint32)
            b = np.array([s[1] for s in slots], np.uint64).astype(np.uint32)
            c = np.array([s[2] for s in slots], np.float32)
            d = fragments.mma_sync(ins, a, b, c)
            return [tuple(np.float32(v) for v in row) for row in d]
        return _collective(mine, run)
    mma.__name__ = f"mma_{precision}"
    return mma


def _cp_async16_sim(sarr, soff, garr, goff, nbytes):
    soff, goff, nbytes = int(soff), int(goff), int(nbytes)
    if soff % 16:
        raise ValueError(f"cp.async destination {soff} is not 16-byte aligned")
    if not 0 <= nbytes <= 16:
        raise ValueError(f"cp.async src-size {nbytes} outside 0..16")
    _record("cp_async16", soff)
    dst = _raw(sarr)
    if soff + 16 > dst.size:
        raise IndexError(f"cp.async destination {soff}..{soff + 16} outside {dst.size} B")
    dst[soff:soff + 16] = 0
    if nbytes:
        src = _raw(garr)
        if goff % 16 or goff + nbytes > src.size:
            raise IndexError(f"cp.async source bytes {goff}..{goff + nbytes} outside "
                             f"{src.size} B or not 16-byte aligned")
        dst[soff:soff + nbytes] = src[goff:goff + nbytes]


def _lds32_sim(sarr, off):
    off = int(off)
    _record("lds32", off)
    return np.uint32(_u32_at(_raw(sarr), off))


def _cvt_tf32_sim(x):
    return np.uint32(fragments.round_tf32(np.array([x], np.uint32).view(np.float32))
                     .view(np.uint32)[0])


def _nop():
    return None


@functools.lru_cache(maxsize=None)
def sim() -> _pytypes.SimpleNamespace:
    """The Python twins of :func:`gpu`'s intrinsics (for the CUDA simulator)."""
    return _pytypes.SimpleNamespace(
        mma={k: _mma_sim(k) for k in MMA_PTX}, ldsm_x4=_ldsm_sim(False),
        ldsm_x4_trans=_ldsm_sim(True), cp_async16=_cp_async16_sim, cp_commit=_nop,
        cp_wait=lambda n: _nop, cvt_tf32=_cvt_tf32_sim, lds32=_lds32_sim, simulated=True)
