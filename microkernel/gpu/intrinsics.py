"""16-byte global loads and stores for numba CUDA kernels (LLVM IR intrinsics).

numba-cuda has no ``float4`` global access: indexing ``A[r, c]`` four times gives
four 4-byte loads, because NVVM's load/store vectoriser cannot prove that the
address is 16-byte aligned (the array's data pointer carries no alignment). These
intrinsics (``numba.cuda.extending.intrinsic``, the documented escape hatch) emit
one ``<4 x float>`` load or store with ``align 16`` in the global address space,
which NVVM lowers to ``ld.global.v4.f32`` (:func:`ld4`) and ``st.global.v4.f32``
(:func:`st4`): the same technique as numba-cuda's own ``cache_hints`` module
(``ldcg`` & co.), with a vector type. :func:`ldg4` (read-only data) is inline PTX
``ld.global.nc.v4.f32``, which LLVM may not move.

Each takes a C-contiguous array and a *flat* element index ``i`` (row * columns +
column): the caller guarantees ``i % 4 == 0``, a 16-byte aligned data pointer and
a row length that is a multiple of 4 (:func:`microkernel.gpu.front.gemm` checks
these on the host and otherwise uses the kernel variant with scalar loads).

Under the CUDA simulator the kernels call :data:`SIM` instead: plain Python
versions that also *assert* the alignment contract (flat index a multiple of 4,
the four elements on one row), so that the simulator tests catch a vector access
the hardware would fault on.

Importing this module imports numba-cuda (call it only from a kernel factory).
"""
from __future__ import annotations

__all__ = ["ldg4", "ld4", "st4", "SIM", "sim_ldg4", "sim_st4", "element_ptr"]


def element_ptr(context, builder, aryty, idxty, ary, idx):
    """LLVM IR (inside an intrinsic's codegen): the generic pointer to ``ary.flat[idx]``
    (the index widened to 64 bits by its signedness)."""
    from llvmlite import ir
    data = context.make_array(aryty)(context, builder, value=ary).data
    if idx.type.width < 64:
        i64 = ir.IntType(64)
        idx = builder.sext(idx, i64) if idxty.signed else builder.zext(idx, i64)
    return builder.gep(data, [idx])


def _make():
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    f32 = ir.FloatType()
    v4 = ir.VectorType(f32, 4)

    def _vec_ptr(context, builder, aryty, idxty, ary, idx):
        ptr = element_ptr(context, builder, aryty, idxty, ary, idx)
        gptr = builder.addrspacecast(ptr, ir.PointerType(f32, 1))
        return builder.bitcast(gptr, ir.PointerType(v4, 1))

    def _check(arr, idx):
        if not (isinstance(arr, types.Array) and arr.dtype == types.float32
                and arr.layout == "C"):
            return False
        return isinstance(idx, types.Integer)

    def _load4(read):
        """The typer of a load of 4 floats at ``arr.flat[idx]``: ``read(builder, vptr)``
        gives the 4 values from the 16-byte aligned ``<4 x float>`` global pointer."""
        def typer(typingctx, arr, idx):
            if not _check(arr, idx):
                return None
            sig = types.UniTuple(types.float32, 4)(arr, idx)

            def codegen(context, builder, sig, args):
                vptr = _vec_ptr(context, builder, sig.args[0], sig.args[1], *args)
                return context.make_tuple(builder, sig.return_type, read(builder, vptr))
            return sig, codegen
        return typer

    s4 = ir.LiteralStructType([f32] * 4)
    ldg_asm = ir.InlineAsm(ir.FunctionType(s4, [ir.PointerType(f32, 1)]),
                           "ld.global.nc.v4.f32 {$0, $1, $2, $3}, [$4];",
                           "=f,=f,=f,=f,l", side_effect=True)

    def _read_nc(builder, vptr):
        # inline PTX with side effects: LLVM keeps the load where the source puts it.
        # (A plain invariant <4 x float> load is free to move, and NVVM sank the
        # loads of the next k block below the FMAs, next to the shared stores that
        # use them: no overlap of global latency with the FMAs.)
        r = builder.call(ldg_asm, [builder.bitcast(vptr, ir.PointerType(f32, 1))])
        return [builder.extract_value(r, c) for c in range(4)]

    def _read_coherent(builder, vptr):
        v = builder.load(vptr, align=16)
        return [builder.extract_element(v, ir.Constant(ir.IntType(32), c)) for c in range(4)]

    def ldg4(typingctx, arr, idx):
        return _load4(_read_nc)(typingctx, arr, idx)

    def ld4(typingctx, arr, idx):
        return _load4(_read_coherent)(typingctx, arr, idx)

    def st4(typingctx, arr, idx, x0, x1, x2, x3):
        if not _check(arr, idx) or any(x != types.float32 for x in (x0, x1, x2, x3)):
            return None
        sig = types.void(arr, idx, x0, x1, x2, x3)

        def codegen(context, builder, sig, args):
            vptr = _vec_ptr(context, builder, sig.args[0], sig.args[1], args[0], args[1])
            v = ir.Constant(v4, ir.Undefined)
            for c in range(4):
                v = builder.insert_element(v, args[2 + c], ir.Constant(ir.IntType(32), c))
            builder.store(v, vptr, align=16)
            return context.get_dummy_value()
        return sig, codegen

    ldg4.__doc__ = "ldg4(arr, i) -> (x0, x1, x2, x3): ld.global.nc.v4.f32 of arr.flat[i:i+4]."
    ld4.__doc__ = "ld4(arr, i) -> (x0, x1, x2, x3): ld.global.v4.f32 (coherent) of arr.flat[i:i+4]."
    st4.__doc__ = "st4(arr, i, x0, x1, x2, x3): st.global.v4.f32 to arr.flat[i:i+4]."
    return intrinsic(ldg4), intrinsic(ld4), intrinsic(st4)


ldg4, ld4, st4 = _make()


def _sim_flat(arr, i):
    cols = arr.shape[1]
    i = int(i)
    r, c = divmod(i, cols)
    assert i % 4 == 0, f"vector access at flat index {i}: not a multiple of 4"
    assert c + 4 <= cols, f"vector access at ({r}, {c}) crosses the end of a row of {cols}"
    assert r < arr.shape[0], f"vector access at row {r} of {arr.shape[0]}"
    return r, c


def sim_ldg4(arr, i):
    """Simulator version of :func:`ldg4` / :func:`ld4` (asserts the contract)."""
    r, c = _sim_flat(arr, i)
    return arr[r, c], arr[r, c + 1], arr[r, c + 2], arr[r, c + 3]


def sim_st4(arr, i, x0, x1, x2, x3):
    """Simulator version of :func:`st4` (asserts the contract)."""
    r, c = _sim_flat(arr, i)
    arr[r, c] = x0
    arr[r, c + 1] = x1
    arr[r, c + 2] = x2
    arr[r, c + 3] = x3


#: The simulator's stand-ins, by name.
SIM = {"ldg4": sim_ldg4, "ld4": sim_ldg4, "st4": sim_st4}
