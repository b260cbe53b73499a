"""The warp-tiled SIMT SGEMM: a kernel generator (Python source for numba).

For a :class:`~microkernel.gpu.tiles.GpuTile` with a warp tile (``wm``, ``wn``)
this module writes the kernel as Python source, with every compile-time constant
inlined and the k loop of one shared-memory stage **fully unrolled**, and hands
it to ``numba.cuda.jit``. The techniques are those of the hand-written SGEMMs that
reach 80-94% of cuBLAS (siboehm, "How to Optimize a CUDA Matmul Kernel for
cuBLAS-like Performance", 2022, kernels 6-10; CUTLASS, "Efficient GEMM in CUDA",
SIMT path: ``MmaSimt``, 128x128x8 threadblocks of 32x64 warps):

* **Warp tiling.** Warp w of the block owns a WM x WN tile of C; its 32 lanes form
  an LM x LN grid; a lane holds TM x TN accumulators in groups of 4 x 4 strided by
  4*LM rows and 4*LN columns inside the warp tile (:class:`GpuTile` docs). Each
  16-byte fragment load from shared memory is then LM (or LN) distinct float4s,
  broadcast to the other lanes: one wavefront, no bank conflict.
* **float4 global loads.** A and B are read 16 bytes at a time
  (:mod:`microkernel.gpu.intrinsics`: ``ld.global.nc.v4.f32``); the thread's
  flat indices are computed once and advanced by BK (A) and BK*N (B) per k
  block, and the edge guards are one predicate per float4 (the row of A, the
  column group of B, the k block against the split's end). This needs K and N
  multiples of 4 and 16-byte aligned operands; otherwise the *scalar* variant
  of the same kernel (``vec=False``) loads element by element (any shape, any
  alignment). When the tile divides the problem (M % BM == N % BN == K % BK == 0)
  the *exact* variant (``exact=True``, float4) has no load guards at all: it
  runs the k loop one block short with unconditional loads and computes the
  last block after it, so no load reaches past A, B or the split (the
  ``copy="async16"`` tiles' exact variant instead drops their copies' guards,
  :mod:`microkernel.gpu.simt_async`). ptxas 13.0
  (sm_90) then issues 4-10% fewer instructions per k block; on the H200 it took
  0.913-0.999 of the vec time for three of the five AUTO tiles and up to 1.060
  for the 8x16 one (:data:`EXACT_SLOWER`).
* **A transposed into shared memory** (but for ``copy="async16"``, which keeps A
  k-contiguous: :mod:`microkernel.gpu.simt_async`), k-major, so that a lane's TM values of A
  at one k are contiguous; the transposing stores are conflict-free thanks to
  the skewed layout of :class:`~microkernel.gpu.tiles.SharedLayout` (checked
  by :func:`bank_report`).
* **Double buffering** (``stages=2``): the next k block is loaded from global
  memory into registers while the FMAs of this one run, then stored into the
  other shared buffer; one barrier per k block. Inside the unrolled k loop the
  fragments of k+1 are loaded before the FMAs of k (``pipeline=True``).
* **Registers.** The k steps of a stage are unrolled in the source (every shared
  offset a constant); the TM x TN products of one k step are constant-trip loops
  over ``cuda.local.array`` accumulators and fragments that NVVM unrolls and keeps
  in registers (:data:`LOOPS`; writing all TM*TN*BK statements out gives the same
  SASS and three times numba's compile time); the staged values are scalar
  variables. Index arithmetic is unsigned (numba types ``np.uint32`` constants as
  unsigned and widens them to uint64, without the signed wrap-around code); the
  flat global indices are kept in uint32; ``min_blocks`` caps the registers
  (``max_registers``).
* **Load placement.** The next k block's global loads are unconditional (the
  address clamped to element 0 and the value zeroed with ``cuda.selp`` outside
  the matrix or the split) and so are its shared stores: under ``if more:``
  ptxas sank the loads into the store block, below all the FMAs.
* **Split-K**, in one launch or two. With ``gridDim.z == S > 1`` block z
  accumulates k in ``[z*kslice, min(K, (z+1)*kslice))`` and writes its raw partial
  sums to rows ``z*M .. z*M+M-1`` of the workspace ``W`` ((S*M) x N). The general
  kernel then counts the block in the tile's slot of ``T`` (an atomic add after a
  ``threadfence``) and the tile's last block forms
  ``C = alpha*(W_0 + W_1 + ... + W_{S-1}) + beta*C`` in that fixed order and resets
  the slot (one launch). The *partials* kernel (``partials=True``) stops after the
  partial sums and the reduction kernel of :mod:`microkernel.gpu.simt_splitk` forms
  C in the same order (two launches: on the H200 2.3-13 us less GPU time, one more
  launch on the host; :data:`microkernel.gpu.launch.TWO_LAUNCH_MIN_S`). Both
  are bit-identical from run to run and to each other. With ``gridDim.z == 1`` the
  general kernel writes ``alpha*acc + beta*C`` to C directly (W and T are ignored).
  The unsplit launches keep the general kernel, runtime split-K branch and all: with
  the branch compiled out ptxas allocated the 128x256 tile worse (4096^3: 3067 us
  against 2866 us, ``bench/results/h200/race_partials.md``).

BLAS semantics are the original kernel's: beta == 0 never reads C; alpha == 0
skips the k loop (A and B not read); M == 0 or N == 0 is not launched.

:func:`kernel_source` returns the source (read it to see exactly what runs);
:func:`build` compiles it (or, under the simulator, runs it as Python with the
simulator stand-ins of the vector intrinsics, which assert their alignment
contract).
"""
from __future__ import annotations

import numpy as np

from .raster import BLOCK_INDEX
from .simt_epilogue import emit_epilogue
from .simt_splitk import last_block_reduces
from .simt_variants import EXACT_SLOWER, VARIANTS, has_exact, variant_for  # noqa: F401
from .tiles import WARP_SIZE, GpuTile

__all__ = ["SIGNATURE", "kernel_source", "build", "variant_for", "has_exact", "VARIANTS",
           "EXACT_SLOWER", "LOOPS", "bank_report"]

#: Launch signature: A (M, K), B (K, N), C (M, N), W (S*M, N) workspace (C when
#: not split), T (uint32, one count per block tile, zero between calls; any uint32
#: array when not split), alpha, beta, kslice (k per split, a multiple of bk).
SIGNATURE = ("void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1], "
             "uint32[::1], float32, float32, uint32)")


class _Src:
    """Indented source lines plus the unsigned constants they name."""

    def __init__(self):
        self.lines: list[str] = []
        self.consts: dict[str, np.uint32] = {}
        self.ind = 1

    def u(self, v: int) -> str:
        name = f"U{v}"
        self.consts[name] = np.uint32(v)
        return name

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def block(self):
        src = self

        class _B:
            def __enter__(self_):
                src.ind += 1

            def __exit__(self_, *exc):
                src.ind -= 1
        return _B()


def _offsets(t: GpuTile):
    """Constant block-local row offsets of acc[i, :] and column offsets of acc[:, j]
    relative to the lane's first row (am) and column (bn)."""
    rows = [(i // t.gm) * (t.lm * t.gm) + i % t.gm for i in range(t.tm)]
    cols = [(j // t.gn) * (t.ln * t.gn) + j % t.gn for j in range(t.tn)]
    return rows, cols


#: Emit the thread tile's products as constant-trip loops over local arrays (numba
#: compiles a few statements, NVVM unrolls them and keeps the arrays in registers)
#: instead of TM*TN*BK scalar statements (the same SASS, about 3x the compile time).
LOOPS = True


def kernel_source(tile: GpuTile, vec: bool = True, loops: bool | None = None,
                  exact: bool = False, partials: bool = False) -> str:
    """The Python source of the warp-tiled kernel ``sgemm(A, B, C, W, alpha, beta,
    kslice)`` for ``tile`` (float4 global accesses when ``vec``; the k steps of a
    stage unrolled, the TM x TN products as loops over local arrays when ``loops``,
    default :data:`LOOPS`, else as scalar statements; see the module docstring).
    ``exact``: the guard-free variant for problems the tile divides (float4 only;
    register staging in two stages or ``copy="async16"``, see the module docstring
    and :mod:`microkernel.gpu.simt_async`). ``copy="async16"`` tiles always get the
    loops form (``loops`` is ignored for them). ``partials``: the split-K kernel that
    only writes its raw partial sums to W (for the reduction kernel), without the
    unsplit epilogue and the last-block reduction. Raises ValueError
    for a tile without a warp tile, or for ``exact`` with ``vec=False``, with
    ``copy="async"``, or with register staging in one stage."""
    t = tile
    rowa = t.copy == "async16"           # A k-contiguous in shared memory: loops only
    loops = (LOOPS if loops is None else loops) or rowa
    if not t.warp_tiled:
        raise ValueError(f"{t.name} has no warp tile (wm, wn): use the original kernel")
    if exact and not (vec and has_exact(t)):
        raise ValueError("the exact variant needs float4 loads and copy='regs' with "
                         "stages=2, or copy='async16'")
    lay = t.shared_layout
    s = _Src()
    u = s.u
    NT, BM, BN, BK = t.threads, t.bm, t.bn, t.bk
    QPR = BK // 4                        # float4s per row of the A tile
    BN4 = BN // 4                        # float4s per row of the B tile
    A4 = BM * BK // 4                    # float4s in the A tile
    B4 = BK * BN // 4
    PA = -(-A4 // NT)                    # staging passes per thread
    PB = -(-B4 // NT)
    rows, cols = _offsets(t)
    vec_out = vec and t.gn % 4 == 0      # float4 C stores

    s("M = uint32(C.shape[0])")
    s("N = uint32(C.shape[1])")
    s("K = uint32(A.shape[1])")
    s("tid = uint32(cuda.threadIdx.x)")
    if t.group_m > 1:                    # grouped rasterization (gpu/raster.py)
        for line in BLOCK_INDEX[True].splitlines():
            s(line.strip().replace("GROUP", u(t.group_m)))
        s(f"row0 = bm_i * {u(BM)}")
        s(f"col0 = bn_i * {u(BN)}")
    else:
        s(f"row0 = uint32(cuda.blockIdx.y) * {u(BM)}")
        s(f"col0 = uint32(cuda.blockIdx.x) * {u(BN)}")
    s("z = uint32(cuda.blockIdx.z)")
    if not partials:
        s(f"split = uint32(cuda.gridDim.z) > {u(1)}")
    s("kb = z * kslice                       # this split's k range [kb, ke)")
    s("ke = K")
    s("if kb + kslice < K:")
    with s.block():
        s("ke = kb + kslice")
    s(f"nk = {u(0)} * ke")
    s("if ke > kb and alpha != 0:              # alpha == 0: A and B are not read")
    with s.block():
        s(f"nk = (ke - kb + {u(BK - 1)}) // {u(BK)}")
    s(f"As = cuda.shared.array({t.stages * lay.a_stage}, float32{ALIGN})   # "
      + ("A, rows interleaved by 4" if rowa else "A^T, skewed"))
    if not partials:
        s("last = cuda.shared.array(1, uint32)      # split-K: the tile's arrival count")
    s(f"Bs = cuda.shared.array({t.stages * lay.b_stage}, float32{ALIGN})")
    s(f"warp = tid // {u(WARP_SIZE)}")
    s(f"lane = tid % {u(WARP_SIZE)}")
    wn_ = t.warps[1]
    s(f"am = uint32((warp // {u(wn_)}) * {u(t.wm)} + (lane // {u(t.ln)}) * {u(t.gm)})")
    s(f"bn = uint32((warp % {u(wn_)}) * {u(t.wn)} + (lane % {u(t.ln)}) * {u(t.gn)})")
    # -- staging coordinates (per pass p: float4 number f = tid + p*NT) --------------
    def coords(x, n, total, per_row, r, q, valid, shared, glob):
        """Pass p's float4 of operand x: its row r{p} and column q{p} in the k block,
        whether it is inside (v{x}{p}; sv{x}{p} for a last pass that not every thread
        has), its shared-memory offset s{x}{p} and (float4 loads) global index g{x}{p}."""
        for p in range(n):
            f = f"(tid + {u(p * NT)})"
            s(f"{r}{p} = {f} // {u(per_row)}")
            s(f"{q}{p} = ({f} % {u(per_row)}) * {u(4)}")
            part = p == n - 1 and total % NT
            s(f"v{x}{p} = ({valid(p)})" + (f" & ({f} < {u(total)})" if part else ""))
            if part:
                s(f"sv{x}{p} = {f} < {u(total)}")
            s(f"s{x}{p} = uint32({shared(p)})")
            if vec and t.copy == "regs":   # the cp.async loops form their own
                s(f"g{x}{p} = uint32({glob(p)})")

    a_shared = ((lambda p: f"(ar{p} % {u(4)}) * {u(lay.a_quarter)} + (ar{p} // {u(4)}) * "
                 f"{u(lay.a_row)} + aq{p}") if rowa else
                (lambda p: f"aq{p} * {u(lay.a_row)} + (aq{p} // {u(4)}) * {u(lay.a_skew)} + ar{p}"))
    coords("a", PA, A4, QPR, "ar", "aq", lambda p: f"row0 + ar{p} < M", a_shared,
           lambda p: f"(row0 + ar{p}) * K + kb + aq{p}")
    coords("b", PB, B4, BN4, "br", "bc", lambda p: f"col0 + bc{p} < N",
           lambda p: f"br{p} * {u(lay.b_row)} + bc{p}",
           lambda p: f"(kb + br{p}) * N + col0 + bc{p}")
    if vec and t.copy == "regs":
        s(f"BKN = uint32({u(BK)} * N)")
    uTM, uTN, uGM, uGN = u(t.tm), u(t.tn), u(t.gm), u(t.gn)
    uSM, uSN = u(t.lm * t.gm), u(t.ln * t.gn)       # stride between a lane's groups
    if loops:
        s(f"acc = cuda.local.array(({t.tm}, {t.tn}), float32)   # the register tile")
        if rowa:
            s(f"r4 = cuda.local.array(({t.tm}, 4), float32)   # A: 4 k of each row")
        else:
            s(f"ra = cuda.local.array({t.tm}, float32)")
        s(f"rb = cuda.local.array({t.tn}, float32)")
        s(f"for i in range({uTM}):")
        with s.block():
            s(f"for j in range({uTN}):")
            with s.block():
                s("acc[i, j] = F0")
    else:
        for i in range(t.tm):
            s(" = ".join(f"acc{i}_{j}" for j in range(t.tn)) + " = F0")

    def load4(x, p, ok, ptr, step, kk, guard, elem):
        """x{p}_0..3: one float4 at ptr (advanced by step) where ``ok``, or four scalars
        elem(c) each where guard(c) (the unaligned variant); zero outside."""
        xs = ", ".join(f"{x}{p}_{c}" for c in range(4))
        if exact:
            # inside A and B by construction: no guard, but threads past the tile's
            # float4 count in a last partial pass load element 0 (their stores are off)
            total, n = (A4, PA) if x == "xa" else (B4, PB)
            g = (f"cuda.selp(sv{x[1]}{p}, {ptr[1]}, {u(0)})" if total % NT and p == n - 1
                 else ptr[1])
            s(f"{xs} = ldg4({ptr[0]}, {g})")
            s(f"{ptr[1]} = uint32({ptr[1]} + {step})")
        elif vec:
            # unconditional load (of element 0 when outside), then zero: no branch,
            # so that ptxas schedules it above the FMAs
            s(f"ok = {ok}")
            s(f"{xs} = ldg4({ptr[0]}, cuda.selp(ok, {ptr[1]}, {u(0)}))")
            for c in range(4):
                s(f"{x}{p}_{c} = cuda.selp(ok, {x}{p}_{c}, F0)")
            s(f"{ptr[1]} = uint32({ptr[1]} + {step})")
        else:
            s(f"kk = {kk}")
            for c in range(4):
                s(f"{x}{p}_{c} = F0")
                s(f"if {guard(c)}:")
                with s.block():
                    s(f"{x}{p}_{c} = {elem(c)}")

    def loads():
        """The k block at k0 into xa*/xb* (zero outside A, B and the split)."""
        for p in range(PA):
            load4("xa", p, f"va{p} & (k0 + aq{p} < ke)", ("A", f"ga{p}"), u(BK), f"k0 + aq{p}",
                  lambda c: f"va{p} and kk + {u(c)} < ke",
                  lambda c: f"A[row0 + ar{p}, kk + {u(c)}]")
        for p in range(PB):
            load4("xb", p, f"vb{p} & (k0 + br{p} < ke)", ("B", f"gb{p}"), "BKN", f"k0 + br{p}",
                  lambda c: f"vb{p} and kk < ke and col0 + bc{p} + {u(c)} < N",
                  lambda c: f"B[kk, col0 + bc{p} + {u(c)}]")

    def stores(oa: str, ob: str):
        """xa*/xb* into the shared stage at offsets oa (A) and ob (B)."""
        a_dst = lambda p, c: f"As[{oa} + sa{p} + {u(c * lay.a_row)}]"  # noqa: E731
        b_dst = lambda p, c: f"Bs[{ob} + sb{p} + {u(c)}]"  # noqa: E731
        for x, n, total, dst in (("a", PA, A4, a_dst), ("b", PB, B4, b_dst)):
            for p in range(n):
                guard = total % NT and p == n - 1     # a last pass not every thread has
                if guard:
                    s(f"if sv{x}{p}:")
                    s.ind += 1
                for c in range(4):
                    s(f"{dst(p, c)} = x{x}{p}_{c}")
                if guard:
                    s.ind -= 1

    def b_frag(k: int):
        """The thread's TN values of B at step k of the stage into rb (loops form)."""
        s(f"for j in range({uTN}):")
        with s.block():
            s(f"rb[j] = Bs[pb + ({u(lay.b_index(k, 0))} + (j // {uGN}) * {uSN} + "
              f"j % {uGN})]")

    def fma_loops(a: str):
        """acc[i, j] += a * rb[j], a the A operand of row i (loops form)."""
        s(f"for i in range({uTM}):")
        with s.block():
            s(f"for j in range({uTN}):")
            with s.block():
                s(f"acc[i, j] = cuda.fma({a}, rb[j], acc[i, j])")

    def frag(k: int, slot: int):
        if loops:
            s(f"for i in range({uTM}):")
            with s.block():
                s(f"ra[i] = As[pa + ({u(lay.a_index(k, 0))} + (i // {uGM}) * {uSM} + "
                  f"i % {uGM})]")
            b_frag(k)
            return
        for i in range(t.tm):
            s(f"a{slot}_{i} = As[pa + {u(lay.a_index(k, rows[i]))}]")
        for j in range(t.tn):
            s(f"b{slot}_{j} = Bs[pb + {u(lay.b_index(k, cols[j]))}]")

    def fmas(slot: int):
        if loops:
            fma_loops("ra[i]")
            return
        for i in range(t.tm):
            for j in range(t.tn):
                s(f"acc{i}_{j} = cuda.fma(a{slot}_{i}, b{slot}_{j}, acc{i}_{j})")

    def compute():
        if rowa:
            from .simt_async import compute_rowa
            compute_rowa(s, u, t, lay, b_frag, fma_loops)
            return
        s("pa = uint32(oa + am)")
        s("pb = uint32(ob + bn)")
        if t.pipeline and not loops:
            frag(0, 0)
            for k in range(BK):
                if k + 1 < BK:
                    frag(k + 1, (k + 1) % 2)
                fmas(k % 2)
        else:
            for k in range(BK):
                frag(k, 0)
                fmas(0)

    def double_buffered_trip():
        s(f"k0 += {u(BK)}")
        # the next k block, into registers: not under `if more` (the vec variant's
        # guards zero-fill past ke), so that the loads stay above the FMAs
        loads()
        compute()
        # ... then into the other stage, unconditionally: under `if more`, ptxas
        # sinks the global loads into that block, below the FMAs (the vec variant's
        # last iteration stores a zero tile that nothing reads)
        stores(f"({u(lay.a_stage)} - oa)", f"({u(lay.b_stage)} - ob)")
        s("cuda.syncthreads()")
        s(f"oa = {u(lay.a_stage)} - oa")
        s(f"ob = {u(lay.b_stage)} - ob")

    s("k0 = kb")
    s(f"oa = {u(0)} * kb")
    s(f"ob = {u(0)} * kb")
    if t.copy != "regs":
        from .simt_async import main_loop
        main_loop(s, u, t, lay, compute, PA, PB, A4, B4, vec, exact)
    elif exact:
        # the loop loads block kt + 1 while it computes block kt, for kt < nk - 1; the
        # last block is computed after it, so no load reaches past the split
        s(f"if nk > {u(0)}:                       # prologue: k block 0 -> stage 0")
        with s.block():
            loads()
            stores("oa", "ob")
            s("cuda.syncthreads()")
            s(f"for kt in range(nk - {u(1)}):")
            with s.block():
                double_buffered_trip()
            compute()
    elif t.stages == 2:
        s(f"if nk > {u(0)}:                       # prologue: k block 0 -> stage 0")
        with s.block():
            loads()
            stores("oa", "ob")
        s("cuda.syncthreads()")
        s("for kt in range(nk):")
        with s.block():
            double_buffered_trip()
    else:
        s("for kt in range(nk):")
        with s.block():
            loads()
            stores("oa", "ob")
            s("cuda.syncthreads()")
            compute()
            s("cuda.syncthreads()")
            s(f"k0 += {u(BK)}")

    # -- epilogue: the accumulators into C, or into W (microkernel.gpu.simt_epilogue) --
    emit_epilogue(s, u, t, vec_out=vec_out, loops=loops, partials=partials, rows=rows,
                  cols=cols)
    if not partials:
        last_block_reduces(s, u, t, vec)
    name = (f"sgemm_{t.name}" + ("_exact" if exact else "" if vec else "_scalar")
            + ("_partials" if partials else ""))
    head = f"def {name}(A, B, C, W, T, alpha, beta, kslice):\n"
    doc = (f'    """{t.name}: {t.tm}x{t.tn} thread tile, {t.wm}x{t.wn} warp tile, '
           f'{BM}x{BN}x{BK} block tile, {NT} threads, {"float4" if vec else "scalar"} '
           f'global loads (generated by microkernel.gpu.simt)."""\n')
    body = "\n".join(s.lines)
    consts = "".join(f"# {k} = np.uint32({int(v)})\n" for k, v in sorted(
        s.consts.items(), key=lambda kv: int(kv[1])))
    return consts + head + doc + body + "\n"


ALIGN = "__ALIGN__"      # replaced by ", alignment=16" on the GPU, "" in the simulator


def _namespace(src: str, sim: bool, cuda) -> dict:
    ns = {"cuda": cuda, "np": np, "uint32": np.uint32, "uint64": np.uint64,
          "float32": np.float32,
          "F0": np.float32(0.0), "F1": np.float32(1.0)}
    for line in src.splitlines():
        if line.startswith("# U") and "= np.uint32(" in line:
            k, v = line[2:].split(" = np.uint32(")
            ns[k] = np.uint32(int(v.rstrip(")")))
    if sim:
        from .async_copy import SIM as ASYNC_SIM
        from .intrinsics import SIM
        ns.update(SIM)
        ns.update(ASYNC_SIM)
    else:
        from . import async_copy, intrinsics
        ns.update(ldg4=intrinsics.ldg4, ld4=intrinsics.ld4, st4=intrinsics.st4)
        ns.update({n: getattr(async_copy, n) for n in async_copy.NAMES})
    return ns


def _compile_source(src: str, name: str, ns: dict):
    code = compile(src, f"<microkernel.gpu.simt {name}>", "exec")
    exec(code, ns)  # noqa: S102 - our own generated source
    return ns[name]


def build(tile: GpuTile, variant: str, sim: bool, cuda, max_registers: int | None,
          partials: bool = False):
    """The numba dispatcher of :func:`kernel_source` for ``variant`` (one of
    :data:`VARIANTS`), the partials kernel when ``partials`` (split-K launches
    reduced by :mod:`microkernel.gpu.simt_splitk`'s kernel), else the general one;
    ``cuda`` is ``numba.cuda``; the simulator rejects ``alignment`` and
    ``max_registers``, so neither is used there."""
    src = kernel_source(tile, variant != "scalar", exact=variant == "exact",
                        partials=partials).replace(ALIGN, "" if sim else ", alignment=16")
    name = (f"sgemm_{tile.name}" + ("" if variant == "vec" else f"_{variant}")
            + ("_partials" if partials else ""))
    fn = _compile_source(src, name, _namespace(src, sim, cuda))
    fn.__microkernel_source__ = src
    if sim or max_registers is None:
        return cuda.jit(fn)
    return cuda.jit(fn, max_registers=max_registers)


from .simt_banks import bank_report, wavefronts as _wavefronts  # noqa: E402,F401
