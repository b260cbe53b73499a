"""Port a CPU register tile to the GPU: thread tile, block tile, resources, checks.

``microkernel port NAME`` (the command line: :mod:`microkernel.commands.port`) takes
a validated CPU tile (``avx512_8x16``, ``sve_8x2v``, ...) and says, *before anything runs*:

1. **Mapping.** The CPU tile MR x NR becomes the per-thread register tile TM x TN
   of the numba kernel (:mod:`microkernel.gpu.kernel`): MR broadcasts of A and an
   NR-wide row of B per k step become regA[TM] and regB[TN] loaded from shared
   memory, MR*NR vector-lane FMAs become TM*TN scalar FMAs. The whole tile goes to
   one thread when its register estimate fits a thread's 255 registers (with a
   16-register margin for the estimate's error); otherwise the longer side is
   halved until it fits and the CPU tile is spread over 2, 4, ... threads
   (e.g. avx512_12x32 -> 12x16 is still ~256 registers -> 12x8, 4 threads).
   SVE tiles are taken at ``vector_bits`` (default 128, the SVE2 width of the
   Grace CPU that shares a GH200 superchip with a Hopper GPU).
2. **Block and warp.** 256 threads (8 warps) arranged (BM/TM) x (BN/TN) with
   power-of-two sides, choosing the most nearly square block tile; a warp tile
   (``warp="auto"``, the default: the most nearly square WM x WN = (LM*TM) x
   (LN*TN) with LM x LN = 32 lanes that divides the block tile, which selects the
   warp-tiled kernel of :mod:`microkernel.gpu.simt`; ``warp=None``: the original
   kernel's layout); BK = 8 (16 when 8 does not
   split the staging loads evenly); two shared-memory stages; for thread tiles of
   32+ accumulators the inner loop is register-pipelined (the next k's regA/regB
   load while this k's FMAs run), with a register cap (``min_blocks``) that keeps
   as many blocks per SM as the unpipelined kernel would have.
3. **Resources.** Registers per thread estimated from the tile:
   ``TM*TN`` accumulators + ``TM + TN`` operand registers (twice when pipelined)
   + the next k block's staging loads held in registers (``(BM+BN)*BK/threads``)
   + 28 for addresses,
   loop counters and the epilogue (the overhead measured with ptxas 13.0 for
   sm_90 on this kernel's numba-generated PTX: 24..40); shared memory per block
   (bytes); the sm_90 occupancy (warps and blocks per SM, the limiting resource)
   from :mod:`microkernel.gpu.occupancy` (cuda_occupancy.h rules).
4. **On a GPU** (or with NVVM + ptxas installed: ``offline``) it compiles the
   kernel and reports the compiled registers, local memory per thread (stack
   frame: spills) and shared memory from numba's dispatcher, the occupancy they
   give, and warns on any spill.
5. ``--validate`` runs :func:`validate`: the kernel against a float64 numpy
   reference on shapes that are not multiples of the block tile and on the BLAS
   semantics cases, with the bound of :mod:`microkernel.validate`.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import subprocess
import tempfile
import warnings

import numpy as np

from ..tile import TileSpec
from .kernel import GpuTile
from .tiles import parse_warp, warp_for
from .occupancy import SM90, Occupancy, occupancy

__all__ = ["PortPlan", "plan", "estimate_regs", "port", "validate", "VALIDATION_CASES",
           "SIM_CASES", "ptxas_resources", "parse_warp",
           "REG_OVERHEAD", "PIPELINE_MIN_TILE", "C_BOUND", "U"]

#: Registers beyond the tile's own (addresses, loop counters, epilogue): measured
#: 24..40 with ptxas 13.0 (sm_90) on this kernel for 4x4..12x8 thread tiles.
REG_OVERHEAD = 28
#: Margin kept below the 255-register ceiling when deciding that a tile fits.
REG_MARGIN = 16
#: Thread tiles with at least this many accumulators get the register-pipelined
#: inner loop by default (H200, 4096^3: +3% for 8x16, +9% for 8x12, +7% for 8x8
#: with its register cap; -4% for 4x4).
PIPELINE_MIN_TILE = 32
#: Default SVE vector length for porting ``sve_*`` tiles (bits).
SVE_BITS = 128
#: the error bound's constants: microkernel.validate's (one definition)
from ..validate import C_BOUND, GUARD as _GUARD, U  # noqa: E402


def estimate_regs(tile: GpuTile) -> int:
    """Registers per thread estimated from the tile (see the module docstring):
    TM*TN accumulators + TM + TN operands (twice with ``pipeline``) + the staged
    loads held for the next k block (``stages == 2``, staged through registers) +
    :data:`REG_OVERHEAD`,
    at most the kernel's register cap (:func:`~microkernel.gpu.kernel.max_registers`)."""
    from .kernel import max_registers
    prefetch = ((tile.a_loads + tile.b_loads) if tile.stages == 2 and tile.copy == "regs"
                else 0)
    operands = (tile.tm + tile.tn) * (2 if tile.pipeline else 1)
    raw = tile.tm * tile.tn + operands + prefetch + REG_OVERHEAD
    cap = max_registers(tile)
    return min(raw, cap) if cap else raw


@dataclasses.dataclass
class PortPlan:
    """The GPU kernel chosen for one CPU tile, and why (before any compile)."""
    spec: str                  # CPU tile name
    mr: int
    nr: int                    # in fp32 columns (SVE: at vector_bits)
    vector_bits: int | None
    tile: GpuTile
    split: tuple[int, int]     # CPU tile = split[0] x split[1] thread tiles
    est_regs: int
    occupancy: Occupancy
    notes: list

    @property
    def threads_per_cpu_tile(self) -> int:
        return self.split[0] * self.split[1]

    def as_dict(self) -> dict:
        return {
            "spec": self.spec, "mr": self.mr, "nr": self.nr,
            "vector_bits": self.vector_bits,
            "thread_tile": [self.tile.tm, self.tile.tn],
            "threads_per_cpu_tile": self.threads_per_cpu_tile,
            "tile": self.tile.as_dict(),
            "est_regs": self.est_regs,
            "est_occupancy": self.occupancy.as_dict(),
            "notes": list(self.notes),
        }


def _block_for(tm: int, tn: int, threads: int, bk: int | None, stages: int,
               pipeline: bool = True) -> GpuTile:
    """Most nearly square power-of-two thread grid; BK 8, else 16, 4, 2, 1."""
    best = None
    ty = 1
    while ty <= threads:
        tx = threads // ty
        if ty * tx == threads:
            bm, bn = ty * tm, tx * tn
            score = (abs(math.log(bm / bn)), -bn)     # square first, then wider
            if best is None or score < best[0]:
                best = (score, bm, bn)
        ty *= 2
    _, bm, bn = best
    err = None
    for k in ((bk,) if bk else (8, 16, 4, 2, 1)):
        try:
            return GpuTile(tm, tn, bm, bn, k, threads, "vec4", stages, "u32", pipeline)
        except ValueError as e:
            err = e
    raise ValueError(f"no BK gives a valid {bm}x{bn} block for a {tm}x{tn} thread tile: "
                     f"{err}")


def plan(spec_or_name, *, vector_bits: int | None = None, threads: int = 256,
         bk: int | None = None, stages: int = 2, pipeline: bool | None = None,
         warp="auto") -> PortPlan:
    """Map a CPU tile spec (or name) to a GPU kernel configuration.

    Parameters
    ----------
    spec_or_name : TileSpec or str
        e.g. ``"avx512_8x16"``.
    vector_bits : int, optional
        SVE vector length in bits for ``sve_*`` tiles (default 128).
    threads : int
        Threads per block (power of two, 32..1024; default 256).
    bk : int, optional
        Force the k depth of the shared-memory stage.
    stages : {1, 2}
    pipeline : bool, optional
        Register double buffering of regA/regB in the inner loop. Default: on for
        thread tiles of at least :data:`PIPELINE_MIN_TILE` elements, with the
        register cap (``min_blocks``) that keeps the unpipelined kernel's blocks
        per SM.
    warp : "auto", None or (wm, wn)
        The warp tile (see :func:`microkernel.gpu.tiles.warp_for`); None keeps the original kernel's
        layout (no warp tile, no split-K, no float4 global loads).

    Returns
    -------
    PortPlan

    Raises
    ------
    TileError / ValueError
        Bad tile name or spec, or no valid block configuration.
    TypeError
        Neither a TileSpec nor a str.
    """
    spec = TileSpec.of(spec_or_name)
    if threads < 32 or threads > 1024 or threads & (threads - 1):
        raise ValueError(f"threads must be a power of two in 32..1024, got {threads}")
    bits = None
    if spec.is_vla:
        bits = vector_bits or SVE_BITS
    mr, nr = spec.mr, spec.nr_at(bits)
    notes = []
    if spec.types != "f32":
        notes.append(f"{spec.name} takes {spec.types} inputs; the SIMT port is fp32 (its "
                     f"MR x NR register tile only): --mma f16 / bf16 for tensor cores")
    tm, tn = mr, nr
    budget = SM90.max_regs_per_thread - REG_MARGIN
    if warp not in ("auto", None) and not (isinstance(warp, (tuple, list))
                                           and len(warp) == 2):
        raise ValueError(f"warp must be 'auto', None or (wm, wn), got {warp!r}")

    def choose(tm, tn):
        base = _block_for(tm, tn, threads, bk, stages, False)
        if warp is not None:
            base = warp_for(base, warp) or base
        if base.warp_tiled:
            # the k loop is unrolled and ptxas schedules the fragment loads itself:
            # no register double buffering by default (in ptxas 13.0's SASS it only
            # adds registers); cap the registers at what the estimate's blocks need
            base = dataclasses.replace(base, pipeline=bool(pipeline))
            mb = occupancy(estimate_regs(base), base.threads, base.smem_bytes).blocks_per_sm
            return dataclasses.replace(base, min_blocks=mb) if mb > 1 else base
        pipe = (tm * tn >= PIPELINE_MIN_TILE) if pipeline is None else pipeline
        if not pipe or base.bk % 2:
            return base
        # keep the occupancy of the unpipelined kernel: cap the registers so that
        # as many blocks fit (8x8: 2 blocks of 256 threads -> <= 128 registers)
        mb = max(1, occupancy(estimate_regs(base), base.threads,
                              base.smem_bytes).blocks_per_sm)
        return dataclasses.replace(base, pipeline=True, min_blocks=mb)

    from .port_targets import halvings
    for tm, tn in halvings(tm, tn):
        tile = choose(tm, tn)
        if estimate_regs(tile) <= budget:
            break
    else:
        raise ValueError(f"{spec.name}: cannot split the {tm}x{tn} tile to fit "
                         f"{budget} registers")
    split = (mr // tm, nr // tn)
    est = estimate_regs(tile)
    if split == (1, 1):
        notes.append(f"{spec.name} ({mr}x{nr}{', VL=%d' % bits if bits else ''}) -> "
                     f"{tm}x{tn} per thread: the whole CPU register tile fits one thread "
                     f"(~{est} of {SM90.max_regs_per_thread} registers)")
    else:
        notes.append(f"{spec.name} ({mr}x{nr}) needs ~{mr * nr + mr + nr + REG_OVERHEAD}+ "
                     f"registers in one thread (> {budget}): split into "
                     f"{split[0]}x{split[1]} threads of {tm}x{tn}")
    notes.append(f"block {tile.bm}x{tile.bn} = {tile.ty}x{tile.tx} threads of {tm}x{tn}, "
                 f"BK={tile.bk}, {tile.stages} shared-memory stage(s), A staged transposed"
                 + (", next k's regA/regB loaded during this k's FMAs" if tile.pipeline else "")
                 + (f", registers capped for {tile.min_blocks} blocks/SM"
                    if tile.min_blocks > 1 else ""))
    if tile.warp_tiled:
        notes.append(f"warp tile {tile.wm}x{tile.wn} ({tile.lm}x{tile.ln} lanes of "
                     f"{tm}x{tn}), {tile.warps[0]}x{tile.warps[1]} warps per block: "
                     f"float4 global loads when K and N are multiples of 4, A transposed "
                     f"(skewed, conflict-free), k loop unrolled, split-K chosen per shape")
    elif warp is not None:
        notes.append(f"no warp tile of 32 lanes divides the {tile.bm}x{tile.bn} block: "
                     f"the original kernel's layout")
    if tm * tn < 32:
        notes.append(f"{tm}x{tn} is a small thread tile: {tm + tn} shared loads per "
                     f"{tm * tn} FMAs, expect it to be shared-memory bound")
    occ = occupancy(est, tile.threads, tile.smem_bytes)
    return PortPlan(spec.name, mr, nr, bits, tile, split, est, occ, notes)


# -- compiled resources ------------------------------------------------------------

def _find_ptxas() -> str | None:
    p = shutil.which("ptxas")
    if p:
        return p
    try:  # the nvidia-cuda-nvcc wheel (CUDA 13: nvidia/cu13/bin/ptxas)
        import nvidia
        for root in getattr(nvidia, "__path__", []):
            for sub in ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas", "cu12/bin/ptxas"):
                cand = os.path.join(root, sub)
                if os.path.exists(cand):
                    return cand
    except ImportError:
        pass
    return None


def ptxas_resources(kernel, arch: str = "sm_90", variant: str | None = None) -> dict | None:
    """Registers, stack frame, spills and shared memory from ``ptxas -v`` on the
    kernel's PTX (numba's NVVM, no GPU needed; ``variant`` "vec" or "scalar" for
    the warp-tiled kernel). None when NVVM or ptxas is missing.
    """
    ptxas = _find_ptxas()
    if ptxas is None:
        return None
    cc = tuple(int(c) for c in arch.removeprefix("sm_"))
    try:
        ptx = kernel.ptx(cc=cc) if variant is None else kernel.ptx(cc=cc, variant=variant)
    except Exception:       # no NVVM (libnvvm) in this environment
        return None
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        from .kernel import max_registers
        cap = max_registers(kernel.tile) if hasattr(kernel.tile, "min_blocks") else None
        extra = [f"-maxrregcount={cap}"] if cap else []
        r = subprocess.run([ptxas, f"-arch={arch}", "-v", *extra, src, "-o",
                            os.path.join(d, "k.cubin")], capture_output=True, text=True)
    out = r.stderr + r.stdout
    if r.returncode:
        return None

    def grab(pat):
        m = re.search(pat, out)
        return int(m.group(1)) if m else 0
    return {"regs": grab(r"Used (\d+) registers"),
            "local_bytes": grab(r"(\d+) bytes stack frame"),
            "spill_stores": grab(r"(\d+) bytes spill stores"),
            "spill_loads": grab(r"(\d+) bytes spill loads"),
            "shared_bytes": grab(r"(\d+) bytes smem"),
            "source": f"ptxas {arch}"}


def _gpu_available() -> bool:
    try:
        from .kernel import _import_cuda
        cuda = _import_cuda()
        return (not cuda.config.ENABLE_CUDASIM) and bool(cuda.is_available())
    except Exception:
        return False


def port(spec_or_name, *, vector_bits: int | None = None, compile: bool | None = None,
         offline: bool = True, validate_cases: bool = False, **plan_kw) -> dict:
    """The port report of a CPU tile (a dict; ``microkernel port`` prints it as tables).

    ``plan`` (the estimate, always); ``compiled`` (numba dispatcher resources on a
    real GPU when ``compile`` is not False, else ptxas's when ``offline`` and NVVM
    + ptxas exist, else None) with its ``occupancy`` and ``spills`` flag;
    ``warnings`` (e.g. spills); ``validation`` (list of case results, when asked);
    ``launch`` (warp-tiled kernels: the split-K the shape-adaptive launch would use
    with this tile on the GPU sweep's default workload, one
    :meth:`~microkernel.gpu.launch.LaunchPlan.as_dict` per shape).
    """
    p = plan(spec_or_name, vector_bits=vector_bits, **plan_kw)
    report = {"plan": p.as_dict(), "compiled": None, "warnings": [], "validation": None,
              "device": None, "compile": "skipped" if compile is False else "unavailable"}
    gpu = _gpu_available() if compile is not False else False
    kern = None
    if gpu or (offline and compile is not False):
        try:
            from .kernel import kernel_for
            kern = kernel_for(p.tile)
        except ImportError:
            kern = None
    res = None
    if gpu and kern is not None:
        from .kernel import cuda
        dev = cuda.get_current_device()
        report["device"] = {"name": str(dev.name.decode() if isinstance(dev.name, bytes)
                                        else dev.name),
                            "cc": list(dev.compute_capability)}
        res = dict(kern.resources(), source="numba dispatcher")
        if p.tile.warp_tiled:
            res["scalar"] = kern.resources("scalar")
    elif kern is not None and offline and not kern.simulated:
        res = ptxas_resources(kern)
        if res is not None and p.tile.warp_tiled:
            res["scalar"] = ptxas_resources(kern, variant="scalar")
    if res is not None:
        report["compile"] = res["source"]
        occ = occupancy(res["regs"], p.tile.threads, res["shared_bytes"])
        res["occupancy"] = occ.as_dict()
        for label, r in (("", res), (" (scalar variant)", res.get("scalar"))):
            if not r:
                continue
            r["spills"] = r.get("local_bytes", 0) > 0 or r.get("spill_stores", 0) > 0
            if r["spills"]:
                msg = (f"{p.tile.name}{label}: {r.get('local_bytes', 0)} bytes of local "
                       f"memory per thread: the register tile spills (compiled "
                       f"{r['regs']} registers)")
                report["warnings"].append(msg)
                warnings.warn(msg, RuntimeWarning, stacklevel=2)
        report["compiled"] = res
    if p.tile.warp_tiled:
        from .launch import plan_launch
        from .sweep import workload_shapes
        report["launch"] = [plan_launch(m, n, k, tile=p.tile).as_dict()
                            for m, n, k in workload_shapes()]
    if validate_cases:
        if kern is None:
            from .kernel import kernel_for
            kern = kernel_for(p.tile)
        cases = VALIDATION_CASES if not kern.simulated else SIM_CASES
        report["validation"] = [r for r in validate(kern, cases)]
    return report


# -- validation ----------------------------------------------------------------------

#: (label, M, N, K, alpha, beta, special) — shapes off the block tile and the BLAS
#: semantics cases. special: "nan_c" NaN in C (with beta = 0), "nan_ab" NaN in A and
#: B (with alpha = 0).
VALIDATION_CASES = (
    ("17x33x5", 17, 33, 5, 1.0, 0.0, None),
    ("1x1x1", 1, 1, 1, 1.0, 0.0, None),
    ("64x40x3", 64, 40, 3, 1.0, 0.0, None),
    ("100x100x100", 100, 100, 100, 1.0, 0.0, None),
    ("257x129x77 a,b", 257, 129, 77, 1.5, -0.5, None),
    ("alpha,beta", 33, 17, 9, -2.0, 0.75, None),
    ("beta=0 NaN C", 19, 21, 7, 1.0, 0.0, "nan_c"),
    ("alpha=0 NaN A,B", 19, 21, 7, 0.0, 2.0, "nan_ab"),
    ("alpha=0 beta=0", 19, 21, 7, 0.0, 0.0, "nan_c"),
    ("K=0", 9, 11, 0, 1.0, 0.5, None),
    ("K=0 beta=0", 9, 11, 0, 1.0, 0.0, "nan_c"),
    ("M=0", 0, 7, 5, 1.0, 1.0, None),
    ("N=0", 7, 0, 5, 1.0, 1.0, None),
    # divisible by every AUTO tile: the warp-tiled kernel's guard-free "exact" variant
    ("256x256x64 exact", 256, 256, 64, 1.5, -0.5, None),
)
#: The subset the simulator can afford (it runs every CUDA thread as a Python thread).
SIM_CASES = tuple(c for c in VALIDATION_CASES if c[1] * c[2] * max(c[3], 1) <= 8000
                  and c[0] != "100x100x100") + (("24x24x24", 24, 24, 24, 1.0, 0.0, None),)

_PAD = 64


def validate(kernel, cases=VALIDATION_CASES, *, seed: int = 0) -> list:
    """Run ``kernel`` (an :class:`SgemmKernel`, GpuTile or tile name) on each case
    and check every element against a float64 reference:
    ``|C - C_ref| <= C_BOUND*(K+2)*U*(|alpha||A||B| + |beta||C0|)``.

    C lives inside a device buffer with ``_PAD`` guard elements before and after
    it: a change there is reported as an out-of-bounds write. Returns one dict per
    case: label, m, n, k, alpha, beta, max_err, max_bound, oob, nan (unexpected
    NaN/Inf), ok.
    """
    from ..validate import reference as _reference
    from .kernel import SgemmKernel, _resolve_tile, _import_cuda
    cuda = _import_cuda()
    kern = kernel if isinstance(kernel, SgemmKernel) else _resolve_tile(kernel)
    rng = np.random.default_rng(seed)
    out = []
    for label, m, n, k, alpha, beta, special in cases:
        A, B, C0 = case_operands(rng, m, n, k, special)
        dbuf = guarded_c(cuda, C0)
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        with warnings.catch_warnings():     # tiny grids: numba's low-occupancy warning
            warnings.filterwarnings("ignore", message=".*under-utilization.*")
            kern.launch(dA, dB, dbuf[_PAD:_PAD + m * n].reshape(m, n), alpha, beta)
        # the CPU side's reference and bound (microkernel.validate), one definition
        ref, bound = _reference(A, B, C0, alpha, beta)
        out.append(check_case(label, m, n, k, alpha, beta, dbuf, ref, bound))
    return out


def case_operands(rng, m, n, k, special, stored=np.float32):
    """A (m x k), B (k x n) of ``stored`` values uniform in [-1, 1) and an fp32 C0
    (m x n), with the case's planted NaN (``nan_ab``: A[0, 0] and B[-1, -1];
    ``nan_c``: all of C0)."""
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32).astype(stored)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32).astype(stored)
    C0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    if special == "nan_ab" and A.size and B.size:
        A[0, 0] = np.nan
        B[-1, -1] = np.nan
    if special == "nan_c" and C0.size:
        C0[...] = np.nan
    return A, B, C0


def guarded_c(cuda, C0):
    """A device buffer holding ``C0`` (m x n, row-major) between ``_PAD`` guard
    elements on each side; C is ``buf[_PAD:_PAD + m * n].reshape(m, n)``."""
    buf = np.full(C0.size + 2 * _PAD, _GUARD, np.float32)
    buf[_PAD:_PAD + C0.size] = C0.ravel()
    return cuda.to_device(buf)


def check_case(label, m, n, k, alpha, beta, dbuf, ref, bound) -> dict:
    """One validation row: C from the guarded device buffer against ``ref`` within
    ``bound``; a changed guard is an out-of-bounds write, a NaN/Inf where ``ref`` has
    none an unexpected one."""
    got_buf = dbuf.copy_to_host()
    got = got_buf[_PAD:_PAD + m * n].reshape(m, n).astype(np.float64)
    oob = bool(np.any(got_buf[:_PAD] != _GUARD) or np.any(got_buf[_PAD + m * n:] != _GUARD))
    with np.errstate(invalid="ignore"):
        err = np.abs(got - ref)
    bad_nan = bool(np.any(~np.isfinite(got)))
    max_err = float(np.nanmax(err)) if err.size else 0.0
    ok = (not oob) and (not bad_nan) and bool(np.all(err <= bound))
    return {"label": label, "m": m, "n": n, "k": k, "alpha": alpha, "beta": beta,
            "max_err": max_err, "max_bound": float(bound.max()) if bound.size else 0.0,
            "oob": oob, "nan": bad_nan, "ok": ok}
