"""The source of the tensor-core GEMM kernel: one numba kernel per
:class:`~microkernel.gpu.mma_tile.MmaTile`, generated as Python text (the simple main
loop and the pipelined one, see docs/gpu-tensor-cores.md), compiled by
:mod:`microkernel.gpu.mma_kernel` (the algorithm: that module's docstring)."""
from __future__ import annotations

from .mma_tile import MmaTile
from .raster import BLOCK_INDEX

__all__ = ["source", "signature"]


def signature(tile: MmaTile) -> str:
    """The launch signature: A, B (uint16 words for f16/bf16, float32 for tf32;
    C-contiguous, rows padded to 16 bytes), C float32, K, alpha, beta."""
    et = "float32" if tile.precision == "tf32" else "uint16"
    return (f"void({et}[:, ::1], {et}[:, ::1], float32[:, ::1], uint32, float32, "
            f"float32)")


#: the kernel's first lines, both main loops: its indices in the block, warp and lane
_HEADER = """
def {name}(A, B, C, K, alpha, beta):
    M = uint32(C.shape[0])
    N = uint32(C.shape[1])
    lda = uint64(A.shape[1])
    ldb = uint64(B.shape[1])
    tid = uint32(cuda.threadIdx.x)
    warp = uint32(tid // u(32))
    lane = uint32(tid % u(32))
    g = uint32(lane // u(4))               # the lane's group (row of an mma fragment)
    t = uint32(lane % u(4))                # ... and its thread in the group
    wr = uint32((warp // WARPS_N) * WM)    # the warp tile's first row in the block
    wc = uint32((warp % WARPS_N) * WN)     # ... and first column
"""

_TEMPLATE = _HEADER + """    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    sm = cuda.shared.array(WORDS, uint32, alignment=ALIGN)
    lrow = (lane % u(8)) + u(8) * ((lane // u(8)) % TWO)   # ldmatrix: row of matrix lane//8
    lhi = lane // SIXTEEN
{zero}
    nk = (K + BK - ONE) // BK
    if alpha == 0:
        nk = ZERO                          # A and B are not read
    for it in range(nk + S1):
        if it >= S1:                       # slice it-(S-1) has landed: wait, then barrier
            wait()
            cuda.syncthreads()
        if it < nk:                        # issue slice `it` into stage it % S (cp.async)
            st = (it % S) * STAGE
            k0 = it * BK
{copy}
        commit()
        if it >= S1:                       # compute slice it-(S-1)
            st = ((it - S1) % S) * STAGE
{compute}
{epilogue}
"""


def _simple_copy_src(tile: MmaTile, x: str) -> str:
    """The simple loop's cp.async of one slice of operand ``x`` ("A": BM x BK from
    row0, "B": BK x BN from col0) into stage ``st``: 16-byte chunks, the edge
    zero-filled by a src-size under 16. A thread whose chunk lies past the slice
    (threads that do not divide the chunks) copies chunk 0 again: the same bytes to
    the same place, harmless."""
    ind = " " * 16
    r, c = (("gr", "row0 + r", "M"), ("gk", "k0 + c * CE", "K")) if x == "A" else \
        (("gk", "k0 + r", "K"), ("gn", "col0 + c * CE", "N"))
    chunks = tile.a_chunks if x == "A" else tile.b_chunks
    L = [f"            for i in range({x}_PER):", f"{ind}e = tid + i * NT"]
    if chunks % tile.threads:
        L += [f"{ind}if e >= {x}_CHUNKS:", f"{ind}    e = ZERO"]
    L += [f"{ind}r = e // {x}_CPR", f"{ind}c = e % {x}_CPR", f"{ind}{r[0]} = {r[1]}",
          f"{ind}{c[0]} = {c[1]}", f"{ind}nb = ZERO", f"{ind}goff = uint64(0)",
          f"{ind}if {r[0]} < {r[2]} and {c[0]} < {c[2]}:      # src-size < 16 zero-fills the edge",
          f"{ind}    nb = min(({c[2]} - {c[0]}) * ES, SIXTEEN)",
          f"{ind}    goff = (uint64({r[0]}) * ld{x.lower()} + uint64({c[0]})) * uint64(ES)",
          f"{ind}cp16(sm, st + {'B_BASE + ' if x == 'B' else ''}r * {x}_STRIDE",
          f"{ind}     + ((c ^ (((r >> {x}_SH) * {x}_MUL) & {x}_MASK)) << u(4)), {x}, goff, nb)"]
    return "\n".join(L)


def _compute_src(tile: MmaTile) -> str:
    """The unrolled k steps of one slice: fragments from shared memory, then the
    MI x NI mma (the accumulators are scalars c<mi>_<ni>_<q>)."""
    L = []
    ind = " " * 12
    for kk in range(tile.ki):
        L.append(f"{ind}# k step {kk}: A fragments (ldmatrix.x4)")
        for mi in range(tile.mi):
            L.append(f"{ind}r = wr + u({mi * 16}) + lrow")
            L.append(f"{ind}x = ((r >> A_SH) * A_MUL) & A_MASK")
            L.append(f"{ind}a{mi}_0, a{mi}_1, a{mi}_2, a{mi}_3 = ldsm(sm, st + r * A_STRIDE"
                     f" + (((u({2 * kk}) + lhi) ^ x) << u(4)))")
            if tile.precision == "tf32":
                for q in range(4):
                    L.append(f"{ind}a{mi}_{q} = cvt(a{mi}_{q})")
        if tile.precision == "tf32":
            L.append(f"{ind}# B fragments: b_j = B[8kk + t + 4j, 8ni + g] (32-bit loads)")
            for j in range(2):
                L.append(f"{ind}k = u({kk * 8 + 4 * j}) + t")
                L.append(f"{ind}x = ((k >> B_SH) * B_MUL) & B_MASK")
                for ni in range(tile.ni):
                    L.append(f"{ind}nb = (wc + u({ni * 8}) + g) * u(4)")
                    L.append(f"{ind}b{ni}_{j} = cvt(lds32(sm, st + B_BASE + k * B_STRIDE"
                             f" + (((nb >> u(4)) ^ x) << u(4)) + (nb & u(15))))")
        else:
            L.append(f"{ind}# B fragments (ldmatrix.x4.trans: n8 tiles 2p, 2p+1)")
            L.append(f"{ind}k = u({kk * 16}) + lrow")
            L.append(f"{ind}x = ((k >> B_SH) * B_MUL) & B_MASK")
            for p in range(tile.ni // 2):
                L.append(f"{ind}ch = (wc + u({p * 16}) + u(8) * lhi) * ES // SIXTEEN")
                L.append(f"{ind}b{2 * p}_0, b{2 * p}_1, b{2 * p + 1}_0, b{2 * p + 1}_1 = ldsm_t("
                         f"sm, st + B_BASE + k * B_STRIDE + ((ch ^ x) << u(4)))")
        L.append(f"{ind}# {tile.mi * tile.ni} mma.sync")
        for mi in range(tile.mi):
            for ni in range(tile.ni):
                c = ", ".join(f"c{mi}_{ni}_{q}" for q in range(4))
                L.append(f"{ind}{c} = mma(a{mi}_0, a{mi}_1, a{mi}_2, a{mi}_3, "
                         f"b{ni}_0, b{ni}_1, {c})")
    return "\n".join(L)


def _epilogue_src(tile: MmaTile) -> str:
    """C := alpha*acc + beta*C, fragment by fragment: c_{2h+q} = C[g+8h, 2t+q]."""
    L = ["    # epilogue: fragment (mi, ni) holds c_{2h+q} = C[g + 8h, 2t + q]"]
    for mi in range(tile.mi):
        for h in range(2):
            L.append(f"    rr = row0 + wr + u({mi * 16 + 8 * h}) + g")
            L.append("    if rr < M:")
            for ni in range(tile.ni):
                for q in range(2):
                    v = f"c{mi}_{ni}_{2 * h + q}"
                    L.append(f"        cc = col0 + wc + u({ni * 8 + q}) + TWO * t")
                    L.append("        if cc < N:")
                    L.append("            if beta == 0:        # C is not read")
                    L.append(f"                C[rr, cc] = alpha * {v}")
                    L.append("            else:")
                    L.append(f"                C[rr, cc] = alpha * {v} + beta * C[rr, cc]")
    return "\n".join(L)


# -- the pipelined main loop (tile.pipeline == "pipelined") ------------------------------

def _swz(lay, r: int) -> int:
    return ((r >> lay.shift) * lay.mul) & lay.mask


def _strided(tile: MmaTile, operand: str) -> bool:
    """True when thread ``tid``'s i-th chunk of ``operand`` is its 0th shifted by a
    constant: threads divide the chunks and a row of chunks, and the swizzle does
    not change over the row step (then one 32-bit shared offset and one 64-bit
    global offset per thread serve all its chunks)."""
    lay = tile.a_layout if operand == "A" else tile.b_layout
    cpr = (tile.bk if operand == "A" else tile.bn) * tile.esize // 16
    chunks = tile.a_chunks if operand == "A" else tile.b_chunks
    if chunks % tile.threads or tile.threads % cpr:
        return False
    step = tile.threads // cpr
    return all(_swz(lay, r + step * i) == _swz(lay, r)
               for r in range(step) for i in range(chunks // tile.threads))


def _pipe_invariants(tile: MmaTile) -> dict:
    """Which lane offsets may be computed once: the A swizzle over the 16-row
    fragments mi, the B swizzle over the k steps kk (and, tf32, the 4-row j)."""
    al, bl = tile.a_layout, tile.b_layout
    a_mi = all(_swz(al, wr + 16 * mi + r) == _swz(al, wr + r)
               for wr in range(0, tile.bm, tile.wm) for mi in range(tile.mi) for r in range(16))
    if tile.precision == "tf32":
        b_kk = all(_swz(bl, 8 * kk + 4 * j + t) == _swz(bl, t)
                   for kk in range(tile.ki) for j in (0, 1) for t in range(4))
    else:
        b_kk = all(_swz(bl, 16 * kk + r) == _swz(bl, r)
                   for kk in range(tile.ki) for r in range(16))
    return {"a_mi": a_mi, "b_kk": b_kk}


def _copy_src(tile: MmaTile, ind: str) -> str:
    """cp.async of slice ``lk`` into stage offset ``ws`` (then commit, advance the
    global offsets, lk and ws). Fast path (whole block inside M x N and a whole
    slice inside K): 16-byte copies at precomputed offsets; else each chunk
    guarded as in the simple kernel (src-size < 16 zero-fills the edge)."""
    L = [f"{ind}if lk < nk:", f"{ind}    k0 = uint32(lk * BK)"]
    fast = {op: _strided(tile, op) for op in ("A", "B")}
    i2 = ind + "        "

    def slow(op):
        out = []
        per, nchunks = (tile.a_per, tile.a_chunks) if op == "A" else (tile.b_per, tile.b_chunks)
        for i in range(per):
            out.append(f"{i2}e = uint32(tid + u({i * tile.threads}))")
            if nchunks % tile.threads:
                out.append(f"{i2}if e >= {op}_CHUNKS:")
                out.append(f"{i2}    e = ZERO")
            out.append(f"{i2}r = uint32(e // {op}_CPR)")
            out.append(f"{i2}c = uint32(e % {op}_CPR)")
            out.append(f"{i2}nb = ZERO")
            out.append(f"{i2}goff = uint64(0)")
            if op == "A":
                out += [f"{i2}gr = uint32(row0 + r)", f"{i2}gk = uint32(k0 + c * CE)",
                        f"{i2}if gr < M and gk < K:",
                        f"{i2}    nb = uint32(min((K - gk) * ES, SIXTEEN))",
                        f"{i2}    goff = (uint64(gr) * lda + uint64(gk)) * uint64(ES)",
                        f"{i2}cp16(sm, ws + r * A_STRIDE + ((c ^ (((r >> A_SH) * A_MUL) & A_MASK))"
                        f" << u(4)), A, goff, nb)"]
            else:
                out += [f"{i2}gk = uint32(k0 + r)", f"{i2}gn = uint32(col0 + c * CE)",
                        f"{i2}if gk < K and gn < N:",
                        f"{i2}    nb = uint32(min((N - gn) * ES, SIXTEEN))",
                        f"{i2}    goff = (uint64(gk) * ldb + uint64(gn)) * uint64(ES)",
                        f"{i2}cp16(sm, ws + B_BASE + r * B_STRIDE + ((c ^ (((r >> B_SH) * B_MUL)"
                        f" & B_MASK)) << u(4)), B, goff, nb)"]
        return out

    def quick(op):
        per = tile.a_per if op == "A" else tile.b_per
        base = "" if op == "A" else "B_BASE + "
        lo = op.lower()
        stride = (tile.a_layout if op == "A" else tile.b_layout).stride
        return [f"{i2}cp16(sm, ws + {base}{lo}_s + u({i * _row_step(tile, op) * stride}), "
                f"{op}, {lo}_g + uint64({i}) * {lo}_gstep, SIXTEEN)" for i in range(per)]

    if fast["A"] or fast["B"]:
        L.append(f"{ind}    if full_mn and k0 + BK <= K:")
        L += quick("A") if fast["A"] else slow("A")
        L += quick("B") if fast["B"] else slow("B")
        L.append(f"{ind}    else:")
    else:
        L.append(f"{ind}    if True:")
    L += slow("A") + slow("B")
    L += [f"{ind}commit()",
          f"{ind}a_g += uint64(BK * ES)", f"{ind}b_g += b_kstep",
          f"{ind}lk = uint32(lk + ONE)", f"{ind}ws = uint32(ws + STAGE)",
          f"{ind}if ws == SBYTES:", f"{ind}    ws = ZERO"]
    return "\n".join(L)


def _row_step(tile: MmaTile, op: str) -> int:
    cpr = (tile.bk if op == "A" else tile.bn) * tile.esize // 16
    return tile.threads // cpr


def _swizzled_row(ind: str, op: str, var: str, row: str) -> list:
    """Lines that set ``var`` to row ``row`` of operand ``op``'s stage slice and ``x`` to
    that row's XOR swizzle (the chunk term of :meth:`SmemLayout.offset`)."""
    return [f"{ind}{var} = uint32({row})",
            f"{ind}x = uint32((({var} >> {op}_SH) * {op}_MUL) & {op}_MASK)"]


def _frag_load_src(tile: MmaTile, kk: int, fs: int, ind: str, inv: dict) -> list:
    """Fragments of k step ``kk`` from stage offset ``rs`` into register set ``fs``."""
    L = []
    for mi in range(tile.mi):
        if inv["a_mi"]:
            addr = f"rs + al{kk} + u({mi * 16 * tile.a_layout.stride})"
        else:
            L += _swizzled_row(ind, "A", "r", f"wr + u({mi * 16}) + lrow")
            addr = f"rs + r * A_STRIDE + (((u({2 * kk}) + lhi) ^ x) << u(4))"
        L.append(f"{ind}a{fs}_{mi}_0, a{fs}_{mi}_1, a{fs}_{mi}_2, a{fs}_{mi}_3 = ldsm(sm, {addr})")
        if tile.precision == "tf32":
            for q in range(4):
                L.append(f"{ind}a{fs}_{mi}_{q} = cvt(a{fs}_{mi}_{q})")
    if tile.precision == "tf32":
        for j in range(2):
            for ni in range(tile.ni):
                if inv["b_kk"]:
                    addr = f"rs + B_BASE + bl{ni} + u({(kk * 8 + 4 * j) * tile.b_layout.stride})"
                else:
                    L += _swizzled_row(ind, "B", "k", f"u({kk * 8 + 4 * j}) + t")
                    L.append(f"{ind}nb = uint32((wc + u({ni * 8}) + g) * u(4))")
                    addr = ("rs + B_BASE + k * B_STRIDE + (((nb >> u(4)) ^ x) << u(4))"
                            " + (nb & u(15))")
                L.append(f"{ind}b{fs}_{ni}_{j} = cvt(lds32(sm, {addr}))")
    else:
        for p in range(tile.ni // 2):
            if inv["b_kk"]:
                addr = f"rs + B_BASE + bl{p} + u({kk * 16 * tile.b_layout.stride})"
            else:
                L += _swizzled_row(ind, "B", "k", f"u({kk * 16}) + lrow")
                L.append(f"{ind}ch = uint32((wc + u({p * 16}) + u(8) * lhi) * ES // SIXTEEN)")
                addr = "rs + B_BASE + k * B_STRIDE + ((ch ^ x) << u(4))"
            L.append(f"{ind}b{fs}_{2 * p}_0, b{fs}_{2 * p}_1, b{fs}_{2 * p + 1}_0, "
                     f"b{fs}_{2 * p + 1}_1 = ldsm_t(sm, {addr})")
    return L


def _mma_block_src(tile: MmaTile, fs: int, ind: str) -> list:
    L = []
    for mi in range(tile.mi):
        for ni in range(tile.ni):
            c = ", ".join(f"c{mi}_{ni}_{q}" for q in range(4))
            L.append(f"{ind}{c} = mma(a{fs}_{mi}_0, a{fs}_{mi}_1, a{fs}_{mi}_2, a{fs}_{mi}_3, "
                     f"b{fs}_{ni}_0, b{fs}_{ni}_1, {c})")
    return L


def _lane_offset_values(tile: MmaTile) -> dict:
    """The per-lane offsets of :func:`_lane_offsets_src`, evaluated in Python for
    every warp and lane: {"al": [[kk values]], "bl": [[p or ni values]]}."""
    al, bl = tile.a_layout, tile.b_layout
    A, Bv = [], []
    for warp in range(tile.warps):
        wr, wc = (warp // tile.warps_n) * tile.wm, (warp % tile.warps_n) * tile.wn
        for lane in range(32):
            g, t = lane // 4, lane % 4
            lrow, lhi = lane % 8 + 8 * ((lane // 8) % 2), lane // 16
            ar = wr + lrow
            A.append([ar * al.stride + (((2 * kk + lhi) ^ _swz(al, ar)) << 4)
                      for kk in range(tile.ki)])
            if tile.precision == "tf32":
                row = []
                for ni in range(tile.ni):
                    nb = (wc + 8 * ni + g) * 4
                    row.append(t * bl.stride + (((nb >> 4) ^ _swz(bl, t)) << 4) + (nb & 15))
            else:
                row = [lrow * bl.stride + ((((wc + 16 * p + 8 * lhi) * tile.esize // 16)
                                            ^ _swz(bl, lrow)) << 4)
                       for p in range(tile.ni // 2)]
            Bv.append(row)
    return {"al": A, "bl": Bv}


def _xor_steps(rows) -> list | None:
    """[D_j] with value_j == value_0 ^ D_j on every lane, or None."""
    d = [rows[0][j] ^ rows[0][0] for j in range(len(rows[0]))]
    if all(r[j] == r[0] ^ d[j] for r in rows for j in range(len(r))):
        return d
    return None


def _lane_offsets_src(tile: MmaTile, inv: dict) -> str:
    """Per-lane ldmatrix / ld.shared offsets (relative to a stage), once per
    kernel. Where every lane's offset j is its offset 0 XOR a constant (XOR
    swizzle over a 128-byte-aligned row, the common case), offset j is written
    ``al0 ^ D`` so that ptxas may keep it or recompute it with one LOP3."""
    vals = _lane_offset_values(tile)
    L = []

    def emit(name, j, expr, steps):
        if j and steps is not None:
            L.append(f"    {name}{j} = uint32({name}0 ^ u({steps[j]}))")
        else:
            L.append(f"    {name}{j} = uint32({expr})")
    if inv["a_mi"]:
        steps = _xor_steps(vals["al"])
        L.append("    ar = uint32(wr + lrow)")
        L.append("    ax = uint32(((ar >> A_SH) * A_MUL) & A_MASK)")
        for kk in range(tile.ki):
            emit("al", kk, f"ar * A_STRIDE + (((u({2 * kk}) + lhi) ^ ax) << u(4))", steps)
    if inv["b_kk"]:
        steps = _xor_steps(vals["bl"])
        if tile.precision == "tf32":
            L.append("    bx = uint32(((t >> B_SH) * B_MUL) & B_MASK)")
            for ni in range(tile.ni):
                if not (ni and steps is not None):
                    L.append(f"    nb = uint32((wc + u({ni * 8}) + g) * u(4))")
                emit("bl", ni, "t * B_STRIDE + (((nb >> u(4)) ^ bx) << u(4)) + (nb & u(15))",
                     steps)
        else:
            L.append("    bx = uint32(((lrow >> B_SH) * B_MUL) & B_MASK)")
            for p in range(tile.ni // 2):
                if not (p and steps is not None):
                    L.append(f"    ch = uint32((wc + u({p * 16}) + u(8) * lhi) * ES // SIXTEEN)")
                emit("bl", p, "lrow * B_STRIDE + ((ch ^ bx) << u(4))", steps)
    return "\n".join(L)


def _copy_setup_src(tile: MmaTile) -> str:
    """Per-thread offsets of its first chunk (fast path) and the slice steps."""
    L = []
    for op, row, col in (("A", "row0 + r", "c * CE"), ("B", "r", "col0 + c * CE")):
        x = op.lower()
        if _strided(tile, op):
            L += [f"    r = uint32(tid // {op}_CPR)", f"    c = uint32(tid % {op}_CPR)",
                  f"    {x}_s = uint32(r * {op}_STRIDE"
                  f" + ((c ^ (((r >> {op}_SH) * {op}_MUL) & {op}_MASK)) << u(4)))",
                  f"    {x}_g = (uint64({row}) * ld{x} + uint64({col})) * uint64(ES)",
                  f"    {x}_gstep = uint64({_row_step(tile, op)}) * ld{x} * uint64(ES)"]
        else:
            L.append(f"    {x}_g = uint64(0)")
    L.append("    b_kstep = uint64(BK) * ldb * uint64(ES)")
    return "\n".join(L)


_PIPE_TEMPLATE = _HEADER + """{block_index}
    row0 = uint32(bm_i * BM)
    col0 = uint32(bn_i * BN)
    sm = {smem_decl}
    lrow = uint32((lane % u(8)) + u(8) * ((lane // u(8)) % TWO))
    lhi = uint32(lane // SIXTEEN)
{lane_offsets}
{copy_setup}
{zero}
    nk = uint32((K + BK - ONE) // BK)
    if alpha == 0:
        nk = ZERO                          # A and B are not read
    full_mn = row0 + BM <= M and col0 + BN <= N
    lk = ZERO                              # the next slice to copy ...
    ws = ZERO                              # ... into this stage (byte offset)
    while lk < S1:                         # prologue: slices 0 .. S-2 in flight
{copy_prologue}
    wait()
    cuda.syncthreads()
    rs = ZERO                              # the stage being read
{first_load}
    it = ZERO
    while it < nk:
{body}
        it = uint32(it + ONE)
{epilogue}
"""


def _pipe_body_src(tile: MmaTile) -> str:
    """One slice: KI k steps; k step 0 issues the cp.async of slice it+S-1 first;
    the wait + barrier sit before the last k step's load of the next stage."""
    ind = " " * 8
    inv = _pipe_invariants(tile)
    L = []
    fb = tile.frag_buffers
    for kk in range(tile.ki):
        cur = kk % 2 if fb == 2 else 0
        nxt = (kk + 1) % 2 if fb == 2 else 0
        last = kk == tile.ki - 1
        L.append(f"{ind}# k step {kk}")
        if kk == 0:
            L.append(f"{ind}# cp.async of slice it + S - 1 (its stage was read in slice it-1)")
            L.append(_copy_src(tile, ind))
        if fb == 1:
            L += _mma_block_src(tile, cur, ind)
        if last:
            L.append(f"{ind}wait()                     # slice it+1 has landed ...")
            L.append(f"{ind}cuda.syncthreads()         # ... for every warp; stage it free")
            L.append(f"{ind}rs = uint32(rs + STAGE)")
            L.append(f"{ind}if rs == SBYTES:")
            L.append(f"{ind}    rs = ZERO")
        L.append(f"{ind}# fragments of k step {(kk + 1) % tile.ki}"
                 + (" of the next slice" if last else "") + f" -> set {nxt}")
        L += _frag_load_src(tile, (kk + 1) % tile.ki, nxt, ind, inv)
        if fb == 2:
            L.append(f"{ind}# {tile.mi * tile.ni} mma.sync on set {cur}")
            L += _mma_block_src(tile, cur, ind)
    if fb == 2 and tile.ki % 2:            # odd k steps: the next slice starts on set 1
        for mi in range(tile.mi):
            for q in range(4):
                L.append(f"{ind}a0_{mi}_{q} = a1_{mi}_{q}")
        for ni in range(tile.ni):
            for j in range(2):
                L.append(f"{ind}b0_{ni}_{j} = b1_{ni}_{j}")
    return "\n".join(L)


def _pipe_source(tile: MmaTile, zero: str) -> str:
    inv = _pipe_invariants(tile)
    decl = ("cuda.shared.array(0, uint32)" if tile.dynamic_smem
            else "cuda.shared.array(WORDS, uint32, alignment=ALIGN)")
    first = "\n".join(_frag_load_src(tile, 0, 0, "    ", inv))
    return _PIPE_TEMPLATE.format(
        name=tile.name, block_index=BLOCK_INDEX[tile.group_m > 1], smem_decl=decl,
        lane_offsets=_lane_offsets_src(tile, inv), copy_setup=_copy_setup_src(tile),
        zero=zero, copy_prologue=_copy_src(tile, " " * 8), first_load=first,
        body=_pipe_body_src(tile), epilogue=_epilogue_src(tile))


def source(tile: MmaTile) -> str:
    """The generated kernel source of ``tile`` (Python, compiled by numba)."""
    zero = "\n".join(f"    c{mi}_{ni}_{q} = float32(0.0)" for mi in range(tile.mi)
                     for ni in range(tile.ni) for q in range(4))
    if tile.pipeline == "pipelined":
        return _pipe_source(tile, zero)
    src = _TEMPLATE.format(name=tile.name, zero=zero, compute=_compute_src(tile),
                           epilogue=_epilogue_src(tile),
                           copy=_simple_copy_src(tile, "A") + "\n" + _simple_copy_src(tile, "B"))
    if tile.group_m > 1:
        src = src.replace("""    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN""", BLOCK_INDEX[True] + """
    row0 = uint32(bm_i * BM)
    col0 = uint32(bn_i * BN)""")
    if tile.dynamic_smem:
        src = src.replace("cuda.shared.array(WORDS, uint32, alignment=ALIGN)",
                          "cuda.shared.array(0, uint32)")
    return src
