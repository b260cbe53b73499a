"""``microkernel sweep --gpu``: rank GPU tiles on a workload, on a CUDA GPU.

The candidates (:data:`CANDIDATES`, or ``tiles=``) cross the levers of the
warp-tiled kernel: thread tile (8x8, 16x8, 8x16), warp tile (32x64, 64x32,
64x64), block tile (256x128 .. 64x64), BK (8, 16) and shared-memory stages, plus
the shape-adaptive default (``auto``). For each:

1. **compile** (the float4 variant; the scalar one when a shape needs it) and read numba's
   resource report (registers, local memory = spills, shared memory) and the
   occupancy it gives (:mod:`microkernel.gpu.occupancy`);
2. **validate** on every shape of the workload: every element against a float64
   reference, ``|C - C_ref| <= 2 (K+2) 2^-24 |A||B|`` (the bound of
   :mod:`microkernel.validate`); a tile that fails is reported and not timed;
3. **race** on the timing engine (:class:`microkernel.timing.Race`): every
   contender timed in interleaved rounds, the order of shapes and of contenders
   shuffled every round, each sample ``loops`` back-to-back calls of
   :func:`microkernel.gpu.gemm` on device arrays (each tile with the split-K the
   planner gives it for the shape) between two device synchronisations (the
   clock), cuBLAS (``cupy.matmul``, TF32 off) a reference column timed in every
   round; tiles found clearly behind are dropped;
4. **verdict** (:func:`microkernel.stats.verdict`): the leader over the workload
   (geometric mean over shapes of the per-round speed ratios), each other tile's
   speed against it with a bootstrap interval (:func:`microkernel.stats.bootstrap`,
   resampling rounds), ties within the margin.

Workloads (``--workload``): ``deepbench`` (default: the DeepBench inference shapes
with min(m, n) >= 16, plus 4096^3), ``square`` (1024, 2048, 4096), ``small`` (a
quick one: 35x700x2048, 128x1500x1280, 1024^3); ``--scale`` divides dimensions
above 256 as the CPU sweep does.

Without a CUDA GPU, :func:`run` prints why and returns 2.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from .launch import AUTO_TILES
from .tiles import DEFAULT_TILE, GpuTile

__all__ = ["CANDIDATES", "workload_shapes", "sweep_gpu", "run", "render_text",
           "gpu_unavailable_reason"]

#: The GPU sweep's candidate tiles (thread tile x warp tile x block tile x BK x stages).
CANDIDATES = (
    DEFAULT_TILE,                                                 # 8x8, w32x64, 128x128x8
    GpuTile(8, 8, 128, 128, 16, wm=32, wn=64),                    # BK 16 (143 regs: 1 block)
    GpuTile(8, 8, 128, 128, 8, min_blocks=2, wm=64, wn=32),       # lanes 8x4
    GpuTile(16, 8, 256, 128, 8, wm=64, wn=64),                    # 16x8 thread tile
    GpuTile(8, 16, 128, 256, 8, wm=64, wn=64),                    # 8x16 thread tile
    GpuTile(8, 8, 128, 128, 8, stages=1, wm=32, wn=64),           # one stage (114 regs)
    AUTO_TILES[2],                                                # 64x128 block
    AUTO_TILES[3],                                                # 64x64 block
)

AUTO = "auto"
CUBLAS = "cuBLAS"


def workload_shapes(name: str = "deepbench", scale: int = 1) -> list[tuple[int, int, int]]:
    """(m, n, k) of a GPU workload (see the module docstring). Raises ValueError for
    an unknown name or a scale < 1."""
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    if name == "deepbench":
        from ..workloads import deepbench
        shapes = [(p.m, p.n, p.k) for p in deepbench() if min(p.m, p.n) >= 16]
        shapes.append((4096, 4096, 4096))
    elif name == "square":
        shapes = [(s, s, s) for s in (1024, 2048, 4096)]
    elif name == "small":
        shapes = [(35, 700, 2048), (128, 1500, 1280), (1024, 1024, 1024)]
    else:
        raise ValueError(f"the GPU sweep's workloads are deepbench, square and small; "
                         f"got {name!r}")
    if scale > 1:
        shapes = [tuple(x // scale if x > 256 else x for x in s) for s in shapes]
    return shapes


def gpu_unavailable_reason() -> str | None:
    """None when a CUDA GPU can run the kernels, else why not."""
    try:
        from .kernel import _import_cuda
        cuda = _import_cuda()
    except ImportError as e:
        return str(e)
    if cuda.config.ENABLE_CUDASIM:
        return "numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1): no real GPU to time"
    try:
        if not cuda.is_available():
            return "no CUDA GPU here (numba-cuda finds no driver or no device)"
    except Exception as e:  # noqa: BLE001
        return f"no CUDA GPU here ({type(e).__name__}: {e})"
    return None


def _cupy():
    os.environ.setdefault("CUPY_TF32", "0")        # full fp32 cuBLAS
    try:
        import cupy
        return cupy
    except Exception:  # noqa: BLE001
        return None


def sweep_gpu(tiles=None, shapes=None, *, rounds: int = 20, budget: float = 120.0,
              margin: float | None = None, min_time: float = 0.02, min_rounds: int = 5,
              include_auto: bool = True, reference: bool = True, seed: int = 0,
              progress=None) -> dict:
    """Compile, validate and race GPU tiles (see the module docstring); returns a
    JSON-ready dict: ``rows`` (per tile: resources, occupancy, validation, status,
    speed against the leader with its interval, per-shape TFLOP/s), ``verdict``,
    ``shapes`` (per shape: each contender's TFLOP/s, cuBLAS's, the auto plan),
    ``race`` (rounds, stop reason, margin, level).

    Raises RuntimeError without a GPU (see :func:`gpu_unavailable_reason`) and
    ValueError when no tile is valid.
    """
    why = gpu_unavailable_reason()
    if why:
        raise RuntimeError(why)
    from .. import stats
    from ..timing import Contender, Race, Rounds
    from . import front, launch, occupancy as occ
    from .kernel import _import_cuda, kernel_for
    from .port import C_BOUND, U
    margin = stats.DEFAULT_MARGIN if margin is None else margin
    cuda = _import_cuda()
    say = progress or (lambda s: None)
    tiles = list(tiles or CANDIDATES)
    shapes = list(shapes or workload_shapes())
    cp = _cupy() if reference else None
    lim = launch.device_limits()
    rows = {}
    for t in tiles:
        row = {"name": t.name, "tile": t.as_dict(), "status": "pending", "error": None}
        t0 = time.time()
        try:
            kern = kernel_for(t)
            kern.compile("vec")     # the scalar variant compiles if a shape needs it
            row["compile_s"] = round(time.time() - t0, 1)
            res = kern.resources("vec")
            row.update(regs=res["regs"], local_bytes=res["local_bytes"],
                       shared_bytes=res["shared_bytes"], spills=res["local_bytes"] > 0)
            o = occ.occupancy(res["regs"], t.threads, res["shared_bytes"], lim)
            row["occupancy"] = o.as_dict()
        except Exception as e:  # noqa: BLE001 - report and go on
            row.update(status="error", error=f"compile: {type(e).__name__}: {e}")
        rows[t.name] = row
        say(f"compiled {t.name}: {row.get('regs', '-')} registers, "
            f"{row.get('local_bytes', '-')} B local" + (f" ({row['error']})" if row["error"] else ""))
    rng = np.random.default_rng(seed)
    data = {}
    for (m, n, k) in shapes:
        A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        if cp is not None:
            gA, gB = cp.asarray(A), cp.asarray(B)
            ref = cp.asnumpy(gA.astype(cp.float64) @ gB.astype(cp.float64))
            absr = cp.asnumpy(cp.abs(gA).astype(cp.float64) @ cp.abs(gB).astype(cp.float64))
        else:
            ref = A.astype(np.float64) @ B
            absr = np.abs(A).astype(np.float64) @ np.abs(B)
        bound = C_BOUND * (k + 2) * U * absr
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        dC = cuda.device_array((m, n), np.float32)
        data[(m, n, k)] = (dA, dB, dC, ref, bound)
    names = [t.name for t in tiles] + ([AUTO] if include_auto else [])
    if include_auto:
        rows[AUTO] = {"name": AUTO, "tile": None, "status": "pending", "error": None,
                      "plans": {}}
    for name in names:
        row = rows[name]
        if row["status"] == "error":
            continue
        t = None if name == AUTO else next(x for x in tiles if x.name == name)
        fails = []
        for (m, n, k), (dA, dB, dC, ref, bound) in data.items():
            try:
                dC.copy_to_device(np.full((m, n), np.nan, np.float32))
                front.gemm(dA, dB, dC, tile=t)
                plan = front.gemm.last_plan
                got = dC.copy_to_host().astype(np.float64)
                err = np.abs(got - ref)
                ok = bool(np.all(err <= bound))
                row.setdefault("plans", {})[f"{m}x{n}x{k}"] = plan.as_dict() if plan else None
                if not ok:
                    fails.append(f"{m}x{n}x{k}: max err {float(np.nanmax(err)):.3g} > bound "
                                 f"{float(bound.max()):.3g}")
            except Exception as e:  # noqa: BLE001
                fails.append(f"{m}x{n}x{k}: {type(e).__name__}: {e}")
        row["validation_failures"] = fails
        if fails:
            row["status"] = "invalid"
            row["error"] = fails[0]
        say(f"validated {name}: {'ok' if not fails else fails[0]}")
    ok_names = [nm for nm in names if rows[nm]["status"] == "pending"]
    if not ok_names:
        raise ValueError("no GPU tile passed validation: " + "; ".join(
            f"{nm}: {rows[nm]['error']}" for nm in names))

    def clock():
        cuda.synchronize()
        return time.perf_counter()

    contenders = []
    labels = {}
    for (m, n, k), (dA, dB, dC, _, _) in data.items():
        label = f"{m}x{n}x{k}"
        labels[(m, n, k)] = label
        flops = 2.0 * m * n * k
        for nm in ok_names:
            t = None if nm == AUTO else next(x for x in tiles if x.name == nm)
            contenders.append(Contender(nm, (lambda t=t, a=dA, b=dB, c=dC:
                                             front.gemm(a, b, c, tile=t)), flops, label))
        if cp is not None:
            gA, gB = cp.asarray(dA), cp.asarray(dB)
            gC = cp.empty((m, n), cp.float32)
            contenders.append(Contender(CUBLAS, (lambda a=gA, b=gB, c=gC:
                                                 cp.matmul(a, b, out=c)), flops, label,
                                        reference=True))
    r = Rounds(contenders, min_time=min_time, clock=clock, seed=seed,
               progress=lambda s: say(f"race: {s}"))
    race = Race(r, margin=margin, min_rounds=min(min_rounds, rounds), max_rounds=rounds,
                budget=budget)
    result = race.run()
    v = result.verdict
    times = r.matrices(ok_names)
    flops = {labels[s]: 2.0 * s[0] * s[1] * s[2] for s in data}
    for nm, c in v.comparisons.items():
        row = rows[nm]
        row["status"] = c.status
        row["vs_leader"] = c.vs_leader.as_dict()
        row["dropped_after"] = result.dropped.get(nm)
        med = np.nanmedian(times[nm], axis=1)
        row["workload_tflops"] = sum(flops.values()) / float(np.sum(med)) / 1e12
        row["tflops"] = {lb: flops[lb] / float(med[i]) / 1e12
                         for i, lb in enumerate(r.shapes)}
        if cp is not None:
            ct = r.matrix(CUBLAS)
            row["vs_cublas"] = stats.bootstrap(stats.paired_ratios(ct, times[nm])).as_dict()
    per_shape = []
    for i, lb in enumerate(r.shapes):
        entry = {"shape": lb, "tflops": {}}
        for nm in ok_names:
            tt = times[nm][i]
            if np.isfinite(tt).any():
                entry["tflops"][nm] = flops[lb] / float(np.nanmedian(tt)) / 1e12
        if cp is not None:
            entry["cublas_tflops"] = flops[lb] / float(np.nanmedian(r.matrix(CUBLAS)[i])) / 1e12
        if include_auto:
            entry["auto_plan"] = rows[AUTO].get("plans", {}).get(lb)
        per_shape.append(entry)
    order = {nm: i for i, nm in enumerate(v.comparisons)}
    ranked = sorted(rows.values(), key=lambda x: (order.get(x["name"], len(order)), x["name"]))
    return {"device": _device_name(cuda), "sm_count": lim.sm_count,
            "shapes": [labels[s] for s in data], "rows": ranked, "verdict": v.as_dict(),
            "leader": v.leader, "ties": list(v.ties),
            "winner": v.leader if v.separated else None, "per_shape": per_shape,
            "reference": CUBLAS if cp is not None else None,
            "cupy_tf32": os.environ.get("CUPY_TF32"),
            "race": {"rounds": result.rounds, "stopped": result.stopped,
                     "seconds": result.seconds, "budget": budget, "margin": margin,
                     "level": v.level, "dropped": result.dropped, "min_time": min_time},
            "samples": r.samples()}


def _device_name(cuda) -> str:
    try:
        d = cuda.get_current_device()
        return d.name.decode() if isinstance(d.name, bytes) else str(d.name)
    except Exception:  # noqa: BLE001
        return "?"


def _pct(d) -> str:
    if not d:
        return "-"
    f = lambda x: f"{100 * (x - 1):+.1f}"  # noqa: E731
    return f"{f(d['point'])} [{f(d['lo'])},{f(d['hi'])}]"


def render_text(res: dict) -> str:
    """The sweep's result as plain text (markdown tables; no rich needed)."""
    v = res["verdict"]
    race = res["race"]
    lines = [f"GPU sweep on {res['device']} ({res['sm_count']} SMs): {len(res['shapes'])} "
             f"shapes, {race['rounds']} interleaved rounds in {race['seconds']:.0f} s "
             f"(stopped: {race['stopped']}), tie margin {100 * race['margin']:g}%, "
             f"{100 * race['level']:.0f}% intervals (bootstrap over rounds)", "",
             "| # | tile | warp tile | regs | local B | blocks/SM | vs leader, % | "
             "workload TFLOP/s | vs cuBLAS | status |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for i, r in enumerate(res["rows"], 1):
        t = r.get("tile") or {}
        wt = f"{t['wm']}x{t['wn']}" if t.get("wm") else ("-" if t else "planner")
        o = r.get("occupancy") or {}
        status = r["status"] + (f"@{r['dropped_after']}" if r.get("dropped_after") else "")
        if r.get("error") and r["status"] in ("invalid", "error"):
            status += f": {r['error'][:80]}"
        vs = "leader" if r["status"] == "leader" else _pct(r.get("vs_leader"))
        tf = f"{r['workload_tflops']:.2f}" if r.get("workload_tflops") else "-"
        vc = f"{r['vs_cublas']['point']:.2f}" if r.get("vs_cublas") else "-"
        lines.append(f"| {i} | {r['name']} | {wt} | {r.get('regs', '-')} | "
                     f"{r.get('local_bytes', '-')} | {o.get('blocks_per_sm', '-')} | {vs} | "
                     f"{tf} | {vc} | {status} |")
    if res["per_shape"]:
        names = list(dict.fromkeys(n for e in res["per_shape"] for n in e["tflops"]))
        lines += ["", "TFLOP/s per shape (median over rounds):", "",
                  "| shape | " + " | ".join(names) + " | cuBLAS | auto plan |",
                  "|---|" + "---:|" * (len(names) + 1) + "---|"]
        for e in res["per_shape"]:
            p = e.get("auto_plan")
            cells = [f"{e['tflops'][n]:.2f}" if n in e["tflops"] else "-" for n in names]
            cb = f"{e['cublas_tflops']:.2f}" if "cublas_tflops" in e else "-"
            lines.append(f"| {e['shape']} | " + " | ".join(cells) + f" | {cb} | "
                         + (f"{p['tile']} split {p['split']}" if p else "-") + " |")
    if v.get("too_few"):
        lines += ["", f"tie: {', '.join(v['ties'])} ({v['rounds']} rounds cannot show a "
                      f"difference at {100 * v['level']:g}%: that needs >= "
                      f"{v['rounds_needed']})"]
    elif len(v["ties"]) > 1:
        by = f" by more than {100 * v['margin']:g}%" if v["margin"] else ""
        lines += ["", f"tie: {', '.join(v['ties'])} (not shown slower{by})"]
    else:
        lines += ["", f"winner: {v['leader']}"]
    return "\n".join(lines)


def run(args) -> int:
    """``microkernel sweep --gpu`` from parsed arguments (the CPU sweep's parser:
    --workload, --scale, --rounds, --budget, --margin, --min-time, --json). Returns
    0, 1 when no tile leads, 2 without a GPU or on a bad argument."""
    why = gpu_unavailable_reason()
    if why:
        print(f"microkernel sweep --gpu: {why}", file=sys.stderr)
        return 2
    try:
        shapes = workload_shapes(getattr(args, "workload", None) or "deepbench",
                                 getattr(args, "scale", 1) or 1)
    except ValueError as e:
        print(f"microkernel sweep --gpu: error: {e}", file=sys.stderr)
        return 2
    res = sweep_gpu(shapes=shapes, rounds=getattr(args, "rounds", 20) or 20,
                    budget=getattr(args, "budget", 120.0) or 120.0,
                    margin=getattr(args, "margin", None),
                    min_time=getattr(args, "min_time", 0.02) or 0.02,
                    progress=lambda s: print(s, file=sys.stderr, flush=True))
    print(render_text(res))
    path = getattr(args, "json", None)
    if path:
        import json
        with open(path, "w") as f:
            json.dump(res, f, indent=1, default=str)
        print(f"wrote {path}")
    return 0 if res["leader"] else 1
