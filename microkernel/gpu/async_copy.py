"""Asynchronous global -> shared copies for numba CUDA kernels (``cp.async``, sm_80+).

numba-cuda exposes no ``cp.async``. These intrinsics (``numba.cuda.extending.intrinsic``
with inline PTX, as :mod:`microkernel.gpu.intrinsics` does for ``ld.global.nc``) emit

* :func:`cp_async4` / :func:`cp_async16`: ``cp.async.ca.shared.global [d], [s], 4, n``
  and ``cp.async.cg.shared.global [d], [s], 16, n``: copy 4 (16) bytes from
  ``src.flat[si]`` to ``dst[di]`` without passing through registers; ``n`` (a uint32,
  0 or the copy size) is the *src-size*: the bytes read, the rest of the destination
  is zero-filled, so ``n = 0`` writes zeros and reads nothing (PTX ISA 9.7.9.25.3.1,
  "cp.async");
* :func:`smem_u32` / :func:`gmem_u64`: the shared-window (32-bit) and global (64-bit)
  addresses of ``ary.flat[i]``, computed once per thread, and :func:`cp_async16_at`:
  the 16-byte copy to and from such addresses (``cp.async.cg.shared.global [s], [g],
  16, n`` with a 32-bit shared address), so that a k loop adds byte offsets to them
  instead of forming two generic addresses per copy;
* :func:`cp_commit`: ``cp.async.commit_group``, the copies issued so far form a group;
* :func:`cp_wait0` .. :func:`cp_wait3`: ``cp.async.wait_group N``, wait until at most N
  of this thread's groups are pending. The copies become visible to the other threads
  of the block only after a barrier (``cuda.syncthreads()``) that follows the wait.

The shared address comes from the generic address of the element (``cvta.to.shared``),
the global one likewise (``cvta.to.global``). Each copy, commit and wait clobbers
memory, so that LLVM moves no shared-memory access across it; the address functions
are pure (no clobber). The caller guarantees the contract of the 16-byte forms: ``di``
and ``si`` multiples of 4 with 16-byte aligned data (the kernel's float4 variant;
:func:`microkernel.gpu.front.gemm` checks the operands), and for
:func:`cp_async16_at` byte addresses that are multiples of 16.

Under the CUDA simulator the kernels use :data:`SIM`: the copy is done at once (the
waits and commits do nothing), and the 16-byte form asserts the alignment contract.

Importing this module imports numba-cuda (call it only from a kernel factory).
"""
from __future__ import annotations

__all__ = ["cp_async4", "cp_async16", "cp_commit", "cp_wait0", "cp_wait1", "cp_wait2",
           "cp_wait3", "smem_u32", "gmem_u64", "cp_async16_at", "SIM", "NAMES"]


def _make():
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    from .intrinsics import element_ptr

    i32 = ir.IntType(32)
    i64 = ir.IntType(64)
    void = ir.VoidType()

    def _addr(context, builder, aryty, idxty, ary, idx):
        """The generic address (i64) of ``ary.flat[idx]``."""
        return builder.ptrtoint(element_ptr(context, builder, aryty, idxty, ary, idx), i64)

    def _copy(size: int, cache: str):
        asm = ir.InlineAsm(
            ir.FunctionType(void, [i64, i64, i32]),
            "{ .reg .u64 d, s; cvta.to.shared.u64 d, $0; cvta.to.global.u64 s, $1; "
            f"cp.async.{cache}.shared.global [d], [s], {size}, $2; }}",
            "l,l,r,~{memory}", side_effect=True)

        def typer(typingctx, dst, di, src, si, nbytes):
            ok = all(isinstance(a, types.Array) and a.dtype == types.float32
                     and a.layout == "C" for a in (dst, src))
            if not ok or not all(isinstance(x, types.Integer) for x in (di, si, nbytes)):
                return None
            sig = types.void(dst, di, src, si, nbytes)

            def codegen(context, builder, sig, args):
                d = _addr(context, builder, sig.args[0], sig.args[1], args[0], args[1])
                s = _addr(context, builder, sig.args[2], sig.args[3], args[2], args[3])
                n = args[4]
                n = builder.trunc(n, i32) if n.type.width > 32 else (
                    builder.zext(n, i32) if n.type.width < 32 else n)
                builder.call(asm, [d, s, n])
                return context.get_dummy_value()
            return sig, codegen
        return typer

    def _bare(text: str):
        asm = ir.InlineAsm(ir.FunctionType(void, []), text, "~{memory}", side_effect=True)

        def typer(typingctx):
            def codegen(context, builder, sig, args):
                builder.call(asm, [])
                return context.get_dummy_value()
            return types.void(), codegen
        return typer

    def cp_async4(typingctx, dst, di, src, si, nbytes):
        return _copy(4, "ca")(typingctx, dst, di, src, si, nbytes)

    def cp_async16(typingctx, dst, di, src, si, nbytes):
        return _copy(16, "cg")(typingctx, dst, di, src, si, nbytes)

    def _address(text: str, width: int):
        ty = ir.IntType(width)
        asm = ir.InlineAsm(ir.FunctionType(ty, [i64]), text, "=" + ("r" if width == 32 else "l")
                           + ",l")

        def typer(typingctx, ary, idx):
            if not (isinstance(ary, types.Array) and ary.dtype == types.float32
                    and ary.layout == "C" and isinstance(idx, types.Integer)):
                return None
            sig = (types.uint32 if width == 32 else types.uint64)(ary, idx)

            def codegen(context, builder, sig, args):
                return builder.call(asm, [_addr(context, builder, sig.args[0], sig.args[1],
                                                args[0], args[1])])
            return sig, codegen
        return typer

    def smem_u32(typingctx, ary, idx):
        return _address("{ .reg .u64 t; cvta.to.shared.u64 t, $1; cvt.u32.u64 $0, t; }",
                        32)(typingctx, ary, idx)

    def gmem_u64(typingctx, ary, idx):
        return _address("cvta.to.global.u64 $0, $1;", 64)(typingctx, ary, idx)

    at_asm = ir.InlineAsm(ir.FunctionType(void, [i32, i64, i32]),
                          "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r,~{memory}",
                          side_effect=True)

    def cp_async16_at(typingctx, saddr, gaddr, nbytes):
        if not all(isinstance(x, types.Integer) for x in (saddr, gaddr, nbytes)):
            return None

        def fit(builder, v, w):
            t = ir.IntType(w)
            return (builder.trunc(v, t) if v.type.width > w else
                    builder.zext(v, t) if v.type.width < w else v)

        def codegen(context, builder, sig, args):
            builder.call(at_asm, [fit(builder, args[0], 32), fit(builder, args[1], 64),
                                  fit(builder, args[2], 32)])
            return context.get_dummy_value()
        return types.void(saddr, gaddr, nbytes), codegen

    out = [intrinsic(cp_async4), intrinsic(cp_async16),
           intrinsic(_bare("cp.async.commit_group;"))]
    for n in range(4):
        out.append(intrinsic(_bare(f"cp.async.wait_group {n};")))
    return out + [intrinsic(smem_u32), intrinsic(gmem_u64), intrinsic(cp_async16_at)]


(cp_async4, cp_async16, cp_commit, cp_wait0, cp_wait1, cp_wait2, cp_wait3,
 smem_u32, gmem_u64, cp_async16_at) = _make()

#: The names the kernel source calls.
NAMES = ("cp_async4", "cp_async16", "cp_commit", "cp_wait0", "cp_wait1", "cp_wait2",
         "cp_wait3", "smem_u32", "gmem_u64", "cp_async16_at")


def _sim_src(arr, i):
    cols = arr.shape[1]
    return divmod(int(i), cols)


def sim_cp_async4(dst, di, src, si, nbytes):
    """Simulator version of :func:`cp_async4`: the copy at once (zeros when nbytes == 0)."""
    if int(nbytes):
        r, c = _sim_src(src, si)
        dst[int(di)] = src[r, c]
    else:
        dst[int(di)] = 0.0


def sim_cp_async16(dst, di, src, si, nbytes):
    """Simulator version of :func:`cp_async16` (asserts the 16-byte contract)."""
    di, si = int(di), int(si)
    assert di % 4 == 0, f"16-byte copy to shared index {di}: not a multiple of 4"
    if int(nbytes):
        assert si % 4 == 0, f"16-byte copy from flat index {si}: not a multiple of 4"
        r, c = _sim_src(src, si)
        assert c + 4 <= src.shape[1], f"16-byte copy at ({r}, {c}) crosses a row end"
        for q in range(4):
            dst[di + q] = src[r, c + q]
    else:
        for q in range(4):
            dst[di + q] = 0.0


class SimAddress:
    """The simulator's stand-in for a byte address from :func:`smem_u32` /
    :func:`gmem_u64`: the array and a byte offset into its flat data (adding an integer
    moves it; ``cuda.selp`` chooses between two)."""

    def __init__(self, ary, byte: int):
        self.ary, self.byte = ary, int(byte)

    def __add__(self, n):
        return SimAddress(self.ary, self.byte + int(n))

    __radd__ = __add__


def sim_address(ary, i):
    """Simulator version of :func:`smem_u32` and :func:`gmem_u64`."""
    return SimAddress(ary, 4 * int(i))


def sim_cp_async16_at(saddr, gaddr, nbytes):
    """Simulator version of :func:`cp_async16_at` (asserts the 16-byte contract)."""
    assert saddr.byte % 16 == 0, f"16-byte copy to shared byte {saddr.byte}: not aligned"
    if int(nbytes):
        assert gaddr.byte % 16 == 0, f"16-byte copy from byte {gaddr.byte}: not aligned"
        sim_cp_async16(saddr.ary, saddr.byte // 4, gaddr.ary, gaddr.byte // 4, 16)
    else:
        sim_cp_async16(saddr.ary, saddr.byte // 4, gaddr.ary, 0, 0)


def _nothing():
    return None


#: The simulator's stand-ins, by name.
SIM = {"cp_async4": sim_cp_async4, "cp_async16": sim_cp_async16, "cp_commit": _nothing,
       **{f"cp_wait{n}": _nothing for n in range(4)}, "smem_u32": sim_address,
       "gmem_u64": sim_address, "cp_async16_at": sim_cp_async16_at}
