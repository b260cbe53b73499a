"""``microkernel sweep``: prototype register-tile shapes and rank them.

For one ISA (default: the best this machine runs), enumerate MR x NR candidates
between the latency bound and the register bound (Low et al. 2016, see
``tile.register_budget``), plus gemm()'s default tile of that ISA unless --mr/--nr
restrict the search. For each: generate the C micro-kernel, compile it through cffi,
validate it on the edge catalogue (a failing tile is reported and not timed), read its
inner loop (spills, llvm-mca's predicted cycles per k step). Then two races on the
timing engine (:mod:`microkernel.timing`), every contender in the same rounds:

1. **L1**: each micro-kernel on packed panels hot in L1 beside the ISA's FMA peak
   loop; "% of peak" is the per-round ratio, with its interval.
2. **Workload**: ``gemm()`` with each tile on the workload's tiled shapes
   (min(m, n) >= 16; n = 1 shapes take the driver's GEMV path, the same code for every
   tile), with numpy (and PyTorch / blis where installed) as reference columns. Tiles
   clearly behind the leader (interval below -2%, :data:`microkernel.stats.DROP_MARGIN`)
   are dropped from the race; the leaders keep being timed until every other tile is
   shown to be slower than the leader, or the time budget is spent. The verdict
   (:func:`microkernel.stats.verdict`) is a winner or a tie, with intervals.

An ISA this machine cannot run (``--isa avx512`` without AVX-512, ``neon``/``sve`` on
x86) gets :func:`predicted`: a static ranking from the generated code (register
budget, spills and llvm-mca's cycles per k step for an ``-mcpu``), labelled as
predicted and never mixed with measured numbers.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from . import stats
from .tile import ISAS, TileError, TileSpec, register_budget

__all__ = ["candidates", "SweepRow", "sweep", "predicted", "search_blocking",
           "SweepError", "sweep_isa"]


class SweepError(ValueError):
    """A sweep that cannot start (no candidate tile, nothing valid to time)."""


def candidates(isa: str, mrs=None, nrs=None, max_shapes: int = 16,
               vector_bits: int | None = None, types: str | None = None,
               notes: list | None = None) -> list[TileSpec]:
    """Tile shapes for ``isa`` (and input ``types``, default the ISA's implied ones):
    every MR x NR with MR*NR/lanes >= FMA latency x FMA units (hides FMA latency) and
    accumulators + B vectors + 1 <= vector registers, NR from 1 to 8 vectors.

    ``mrs``/``nrs`` restrict the search (NR in lanes; for SVE in vectors): a requested
    value is taken as it is (an NR beyond 8 vectors too), and given --mr the latency
    bound is not applied. A requested value or pair that gives no tile is appended to
    ``notes`` with the reason (not a multiple of the lanes, over the register budget,
    no MR that also hides the FMA latency). When more than ``max_shapes`` remain, at
    most ``max_shapes`` are kept: those using the most registers (they amortise B
    loads best), the best of each vector width before a second of any width, and a
    note says so.

    AMX: MR of 8, 16, 32, 48 or 64 rows and NR of 16 to 128 columns whose C, A and B
    tiles fit the 8 tile registers, *all* of them (a handful: only 2 x 2 C tiles meet
    the 4-tile latency bound, and the sweep is there to measure the others against it).
    """
    info = ISAS[isa]
    lanes = info.lanes
    types = types or info.implied
    notes = notes if notes is not None else []
    kind = "fp32" if info.implied == "f32" else "C"
    nr_list = []
    for nr in dict.fromkeys(nrs or ()):
        if lanes is not None and nr % lanes:
            near = [x for x in (nr // lanes * lanes, (nr // lanes + 1) * lanes) if x]
            notes.append(f"--nr {nr}: not a multiple of {isa}'s {lanes} {kind} lanes "
                         f"(e.g. {' or '.join(map(str, near))})")
        else:
            nr_list.append(nr)
    if not nrs:
        nr_list = [nv if lanes is None else nv * lanes for nv in range(1, 9)]
    mr_list = list(dict.fromkeys(mrs)) if mrs else (
        [8, 16, 32, 48, 64] if isa == "amx" else list(range(1, 33)))
    latency = not mrs and isa != "amx"
    cands, why = [], {}          # why: (mr, nr) -> the reason it gives no tile
    for nr in nr_list:
        for mr in mr_list:
            try:
                spec = TileSpec(isa, mr, nr, types=types)
            except TileError as exc:
                why[(mr, nr)] = str(exc)
                continue
            b = register_budget(spec)
            if latency and not b.hides_fma_latency:
                why[(mr, nr)] = (f"{spec.name} has {b.accumulators} accumulators, fewer "
                                 f"than the {b.min_accumulators} that hide the FMA latency")
                continue
            cands.append(spec)
    if mrs and nrs:              # every requested pair that gave no tile
        notes += [f"--mr {mr} --nr {nr}: {r}" for (mr, nr), r in why.items()]
    elif mrs:                    # a requested MR that gave no tile with any NR
        notes += [f"--mr {mr}: no NR fits ({why[(mr, nr_list[0])]})" for mr in mr_list
                  if nr_list and not any(s.mr == mr for s in cands)]
    elif nrs:                    # a requested NR that gave no tile with any MR
        for nr in nr_list:
            if not any(s.nr == nr for s in cands):
                rs = [why[(mr, nr)] for mr in mr_list]
                short = [r for r in rs if "hide the FMA latency" in r]
                over = [r for r in rs if "hide the FMA latency" not in r]
                notes.append(f"--nr {nr}: no MR gives a tile that hides the FMA latency and "
                             f"fits the registers (" + "; ".join(short[-1:] + over[:1]) + ")")
    if len(cands) > max_shapes:
        key = lambda s: (-register_budget(s).needed, s.mr)  # noqa: E731
        by_width: dict[int, list[TileSpec]] = {}
        for s in cands:
            by_width.setdefault(s.vectors_per_row, []).append(s)
        firsts = sorted((min(v, key=key) for v in by_width.values()), key=key)
        keep = set((firsts + sorted((s for s in cands if s not in firsts), key=key))[:max_shapes])
        notes.append(f"{max_shapes} of the {len(cands)} enumerated tile shapes kept "
                     f"(--max-shapes {max_shapes}): those using the most registers, one per "
                     f"vector width first")
        cands = [s for s in cands if s in keep]
    return cands


@dataclasses.dataclass
class SweepRow:
    """One tile of a sweep. ``status``: leader / tied / behind (the verdict), or
    invalid (failed the edge catalogue) / error (did not build); ``vs_leader`` and
    ``vs_numpy`` are intervals (dicts of point, lo, hi) of its workload speed relative
    to the leader and to numpy (> 1: faster); ``l1`` holds GFLOP/s and % of peak with
    their intervals."""
    name: str
    mr: int
    nr: int
    k_unroll: int
    registers: str
    compile_s: float = 0.0
    valid: bool = False
    cases: int = 0
    failures: list = dataclasses.field(default_factory=list)
    error: str = ""
    spills: int | None = None
    predicted_cycles_per_k: float | None = None
    mcpu: str | None = None
    l1: dict | None = None
    status: str = ""
    vs_leader: dict | None = None
    vs_numpy: dict | None = None
    workload_gflops: float | None = None
    dropped_after: int | None = None
    is_default: bool = False


def _static(spec: TileSpec, row: SweepRow, mcpu: str | None = None) -> None:
    """Spills and llvm-mca's cycles per k from the inner loop (advisory: a failure is
    noted in the row, never fatal)."""
    try:
        from . import analysis as mk_inspect
        rep = mk_inspect.report(spec, measure=False, mcpu=mcpu)
    except Exception as exc:  # noqa: BLE001 - inspection is advisory
        row.error = (row.error + f" inspect: {exc}").strip()
        return
    row.spills = rep.get("spills")
    row.predicted_cycles_per_k = rep.get("predicted_cycles_per_k")
    row.mcpu = (rep.get("mca") or {}).get("mcpu")


def _prepare(specs, default, progress):
    """Compile, validate and read every tile: [(spec, kernel or None, row)]."""
    from .dispatch import get_kernel
    from .validate import run_catalogue
    out = []
    for spec in specs:
        b = register_budget(spec)
        row = SweepRow(spec.name, spec.mr, spec.nr, spec.k_unroll, f"{b.needed}/{b.available}",
                       is_default=spec == default)
        progress(f"{spec.name}: compile")
        t0 = time.perf_counter()
        try:
            k = get_kernel(spec)
        except Exception as exc:  # noqa: BLE001 - one tile's failure is a row, not a crash
            row.error, row.status = f"{type(exc).__name__}: {exc}", "error"
            out.append((spec, None, row))
            continue
        row.compile_s = time.perf_counter() - t0
        progress(f"{spec.name}: validate")
        results = run_catalogue(k)
        row.cases = len(results)
        row.failures = [r.case.label for r in results if not r.ok]
        row.valid = not row.failures
        if not row.valid:
            row.status = "invalid"
        progress(f"{spec.name}: inner loop")
        _static(spec, row)
        out.append((spec, k if row.valid else None, row))
    return out


def sweep(isa: str | None = None, *, mrs=None, nrs=None, workload: str = "deepbench",
          scale: int = 1, threads: int = 1, max_shapes: int = 16,
          margin: float = stats.DEFAULT_MARGIN, budget: float = 110.0,
          min_rounds: int = 5, max_rounds: int = 40, l1_rounds: int = 9,
          min_time: float = 0.02, peers=None, seed: int = 0, progress=None,
          blocking_search: bool = False, types: str | None = None) -> dict:
    """Run the sweep (see the module docstring); returns a JSON-serialisable dict:
    ``rows`` (SweepRow dicts, ranked), ``verdict`` (stats.Verdict.as_dict()),
    ``winner`` (the leader when separated, else None), ``leader``, ``ties``,
    ``default`` (gemm()'s default tile of the ISA), ``notes`` (requested --mr/--nr values
    that gave no tile and why, the --max-shapes cut), ``problems`` (the workload's shapes,
    each once), ``merged_problems`` (label -> how many DeepBench shapes ``scale`` made
    that one), ``peak`` (GFLOP/s with interval),
    ``shapes`` (per shape: flops, GFLOP/s of every tile and peer, ratio to the shape's
    best with interval), ``race`` (rounds, why it stopped, seconds, budget),
    ``samples`` (every sample of both races).

    ``types`` (microkernel.dtypes; default the ISA's implied types, f32 for the fp32
    ISAs): tiles of those input types, operands of that type in the workload race
    (:func:`microkernel.bench.typed_operands`), the peers on them; the default ISA is
    then the one of gemm()'s kernel for those types (:func:`sweep_isa`).

    Raises SweepError when no tile is a candidate or none passes validation,
    IsaUnavailableError when ``isa`` cannot run here (use :func:`predicted`).
    """
    from . import bench, peers as peers_mod
    from .dispatch import IsaUnavailableError, usable_isas
    from .timing import Race, Rounds
    from .workloads import load, merged as merged_shapes

    progress = progress or (lambda text: None)
    isa = isa or sweep_isa(types)
    types = types or ISAS[isa].implied or ISAS[isa].types[0]
    if isa not in usable_isas():
        raise IsaUnavailableError(f"{isa} cannot run here; microkernel.sweep.predicted() "
                                  f"ranks its tiles statically")
    specs, default, notes = _ranked_specs(isa, types, mrs, nrs, max_shapes)
    all_problems = load(workload, scale)     # shapes that coincide once scaled: once
    merged = merged_shapes(workload, scale)
    problems = bench.tiled(all_problems)
    if not problems:
        raise SweepError(f"workload {workload} has no shape with min(m, n) >= "
                         f"{bench.TILED_MIN} to rank tiles on")
    prepared = _prepare(specs, default, progress)
    ready = [(s, k, r) for s, k, r in prepared if k is not None]
    if not ready:
        raise SweepError("no tile passed validation")
    kernels = [k for _, k, _ in ready]
    rows = {r.name: r for _, _, r in prepared}

    # 1. L1 and peak, interleaved
    l1 = Rounds(bench.l1_contenders(kernels, kernels[0]), min_time=min_time, seed=seed,
                progress=lambda t: progress(f"L1 race: {t}"))
    for _ in range(l1_rounds):
        l1.round()
    l1_fig = bench.l1_figures(l1, [k.label for k in kernels])
    for k in kernels:
        rows[k.name].l1 = {x: v for x, v in l1_fig[k.label].items() if x != "rounds"}

    # 2. the workload race
    peer_names = peers_mod.available(peers, types=types)     # None: all; []: none
    progress(f"workload race: checking {len(kernels)} tiles and {len(peer_names)} peers "
             f"on {len(problems)} shapes against float64")
    with peers_mod.limit_threads(threads, peer_names):
        contenders = bench.gemm_contenders(kernels, problems, threads=threads,
                                           peers=peer_names, seed=seed, types=types,
                                           progress=lambda t: progress(f"workload race: {t}"))
        rounds = Rounds(contenders, min_time=min_time, pause=0.3 if threads > 1 else 0.0,
                        seed=seed, progress=lambda t: progress(
                            f"workload race: {t}, {len(race.active)} tiles left"))
        race = Race(rounds, margin=margin, min_rounds=min_rounds, max_rounds=max_rounds,
                    budget=budget)
        result = race.run()
    v = result.verdict
    times = rounds.matrices([k.name for k in kernels])
    flops = {p.label: p.flops for p in problems}
    total_flops = sum(flops.values())
    numpy_t = rounds.matrix("numpy") if "numpy" in peer_names else None
    for name, c in v.comparisons.items():
        row = rows[name]
        row.status = c.status
        row.vs_leader = c.vs_leader.as_dict()
        row.dropped_after = result.dropped.get(name)
        med = np.nanmedian(times[name], axis=1)
        row.workload_gflops = total_flops / float(np.sum(med)) / 1e9
        if numpy_t is not None:
            row.vs_numpy = stats.bootstrap(stats.paired_ratios(numpy_t, times[name])).as_dict()
    order = {n: i for i, n in enumerate(v.comparisons)}
    ranked = sorted(rows.values(), key=lambda r: (order.get(r.name, len(order)), r.name))

    shapes = _per_shape(rounds, problems, [n for n in v.ties] + [n for n in v.behind
                                                                 if n not in result.dropped],
                        peer_names)
    out = {"isa": isa, "types": types, "workload": workload, "scale": scale, "threads": threads,
           "notes": notes,
           "problems": [p.label for p in all_problems], "merged_problems": merged,
           "ranked_problems": [p.label for p in problems],
           "gemv_problems": [p.label for p in all_problems if p not in problems],
           "peers": {n: peers_mod.describe(n) for n in peer_names},
           "peak": {x: y for x, y in l1_fig[bench.PEAK].items() if x != "rounds"},
           "peak_gflops": l1_fig[bench.PEAK]["gflops"],
           "rows": [dataclasses.asdict(r) for r in ranked],
           "verdict": v.as_dict(), "leader": v.leader, "ties": list(v.ties),
           "winner": v.leader if v.separated else None,
           "default": default.name if default is not None else None,
           "shapes": shapes,
           "race": {"rounds": result.rounds, "stopped": result.stopped,
                    "seconds": result.seconds, "budget": budget, "margin": margin,
                    "drop": race.drop,
                    "level": v.level, "min_rounds": min_rounds, "max_rounds": max_rounds,
                    "dropped": result.dropped, "revived": result.revived,
                    "min_time": min_time},
           "samples": {"l1": l1.samples(), "workload": rounds.samples()}}
    if workload == "minilm" and types == "f32":
        from .dispatch import get_kernel
        from .minilm import run_layer
        layer = run_layer(get_kernel(v.leader))
        out["minilm_check"] = {"kernel": v.leader, "all_ok": layer["all_ok"],
                               "max_err_ratio": layer["max_err_ratio"],
                               "output_rel_diff": layer["output_rel_diff"]}
    if blocking_search:
        from .dispatch import get_kernel
        out["blocking_search"] = search_blocking(get_kernel(v.leader), problems, threads,
                                                 min_time=min_time, seed=seed)
    return out


def _per_shape(rounds, problems, names, peer_names) -> list[dict]:
    """Per problem: every listed tile's and peer's GFLOP/s, and each tile's speed
    relative to the shape's best tile (paired by round, with interval)."""
    out = []
    for i, p in enumerate(problems):
        t = {n: rounds.matrix(n)[i:i + 1] for n in names}
        med = {n: float(np.nanmedian(t[n])) for n in names}
        # the best by the paired statistic the table prints (not by the median time: a
        # slow spell on one tile can put the two in a different order)
        ref = min(names, key=lambda n: med[n])
        best = max(names, key=lambda n: (stats.bootstrap(stats.paired_ratios(
            t[ref], t[n])).point if n != ref else 1.0, n == ref))
        tiles = []
        for n in names:
            iv = stats.bootstrap(stats.paired_ratios(t[best], t[n]))
            tiles.append({"name": n, "gflops": p.flops / med[n] / 1e9,
                          "vs_best": iv.as_dict()})
        out.append({"shape": p.label, "flops": p.flops, "best": best,
                    "tiles": sorted(tiles, key=lambda x: (x["name"] != best,
                                                          -x["vs_best"]["point"])),
                    "peers": {n: rounds.gflops(p.label, n) for n in peer_names}})
    return out


def sweep_isa(types: str | None = None) -> str:
    """The ISA a sweep of input ``types`` takes by default: the best usable fp32 ISA for
    f32 (or None); else the ISA of gemm()'s kernel for those types here (the first usable
    one of :data:`microkernel.registry.TYPED_DEFAULTS`: amx before avx512bf16 before the
    widening avx512 / avx2 tiles), or of the first usable built-in of them (f16h)."""
    from . import registry
    from .dispatch import IsaUnavailableError, best_isa, usable_isas
    if types in (None, "f32"):
        return best_isa()
    usable = usable_isas()
    names = registry.TYPED_DEFAULTS.get(types) or registry.names(types=types)
    for name in names:
        if registry.spec(name).isa in usable:
            return registry.spec(name).isa
    raise IsaUnavailableError(f"no ISA that runs here takes {types} (built-ins: "
                              f"{', '.join(names)})")


def _default(isa: str, types: str):
    """gemm()'s default tile of ``isa`` for ``types`` (None when it has none)."""
    from . import registry
    return registry.typed_default(isa, types)


def _ranked_specs(isa: str, types: str, mrs, nrs, max_shapes: int):
    """(the tiles to rank, gemm()'s default tile or None, notes): the candidates, and
    the default beside them (k-unrolled on x86) when no --mr/--nr narrows the search;
    notes: why requested --mr/--nr values gave no tile, and the --max-shapes cut
    (:func:`candidates`). SweepError, naming those reasons, when there is no candidate."""
    notes: list[str] = []
    specs = candidates(isa, mrs, nrs, max_shapes, types=types, notes=notes)
    if not specs:
        raise SweepError(f"no {isa} {types} tile to sweep: " + "; ".join(notes) if notes else
                         f"no {isa} {types} tile fits the register and latency bounds for "
                         f"--mr {_values(mrs)} --nr {_values(nrs)}")
    default = _default(isa, types)
    if not (mrs or nrs) and default is not None and default not in specs:
        specs.append(default)
    return specs, default, notes


def _values(v) -> str:
    return ",".join(str(x) for x in v) if v else "any"


#: a predicted row whose K loop holds no counted multiply or add (not ranked)
_NO_MULADD = "no mul/add counted: not ranked"


def predicted(isa: str, *, mrs=None, nrs=None, max_shapes: int = 16,
              mcpu: str | None = None, progress=None, types: str | None = None) -> dict:
    """A static ranking for an ISA this machine need not run: each candidate is
    generated and compiled (not executed), its inner K loop read from the object code,
    and llvm-mca (``-mcpu``, default per ISA) predicts cycles per k step. Ranked by
    predicted flops per cycle = the tile's flops per k step / predicted cycles per k
    step, tiles whose K loop spills after all that do not; within one ISA and input
    types that is the order of the predicted FMA-unit utilisation = (FMAs per k / FMA
    units) / predicted cycles per k, which a row gives only where the object code holds
    the model's FMA instructions (``fmas_in_code``): a scalar tile's C is compiled into
    SSE multiplies and adds on x86-64, which no scalar FMA peak describes.
    Returns a dict with ``rows`` (name, registers, spills, predicted cycles per k,
    predicted flops per cycle, predicted utilisation or None), ``mcpu``, ``notes`` (as
    :func:`sweep`'s) and ``predicted: True``.

    Raises SweepError when no tile is a candidate or no tile could be analysed (the
    message names what is missing, e.g. llvm-mca or the cross compiler).
    """
    from . import analysis as analysis_report
    progress = progress or (lambda text: None)
    types = types or ISAS[isa].implied or ISAS[isa].types[0]
    specs, default, notes = _ranked_specs(isa, types, mrs, nrs, max_shapes)
    rows, errors, model_notes = [], [], []
    for spec in specs:
        progress(f"{spec.name}: compile and read the inner loop")
        b = register_budget(spec)
        row = {"name": spec.name, "mr": spec.mr, "nr": spec.nr, "k_unroll": spec.k_unroll,
               "registers": f"{b.needed}/{b.available}", "is_default": spec == default,
               "spills": None, "predicted_cycles_per_k": None, "fmas_per_k":
               b.accumulators, "fmas_in_code": None, "predicted_flops_per_cycle": None,
               "predicted_utilisation": None, "error": ""}
        try:
            rep = analysis_report.report(spec, measure=False, mcpu=mcpu)
            row["spills"] = rep.get("spills")
            cyc = rep.get("predicted_cycles_per_k")
            row["predicted_cycles_per_k"] = cyc
            row["mcpu"] = (rep.get("mca") or {}).get("mcpu")
            row["fmas_in_code"] = rep.get("fmas_per_k")
            for n in rep.get("notes") or ():     # e.g. AMX: llvm-mca has no TMUL timings
                if n not in model_notes:
                    model_notes.append(n)
            code_flops = ((rep.get("loop") or {}).get("per_k") or {}).get("flops")
            if cyc and code_flops == 0:
                row["error"] = _NO_MULADD
            elif cyc:
                row["predicted_flops_per_cycle"] = rep["expected"]["flops_per_k"] / cyc
                if row["fmas_in_code"] == row["fmas_per_k"]:
                    row["predicted_utilisation"] = (row["fmas_per_k"] / spec.info.fma_units) / cyc
            elif rep.get("mca_missing") or rep.get("mca_error"):
                row["error"] = rep.get("mca_missing") or rep.get("mca_error")
        except Exception as exc:  # noqa: BLE001 - one tile's failure is a row
            row["error"] = f"{type(exc).__name__}: {exc}"
            errors.append(row["error"])
        rows.append(row)
    if all(r["predicted_cycles_per_k"] is None for r in rows):
        raise SweepError(f"no {isa} tile could be analysed: {errors[0] if errors else rows[0]['error']}")
    # a tile that spills is ranked after every one that does not: llvm-mca's model
    # absorbs the stack traffic, a real core's load ports and store forwarding do not
    rows.sort(key=lambda r: (bool(r["spills"]), -(r["predicted_flops_per_cycle"] or -1)))
    unranked = any(r["error"] == _NO_MULADD for r in rows)
    if all(r["predicted_flops_per_cycle"] is None for r in rows):
        raise SweepError(f"no {isa} {types} tile could be ranked: " + (
            "no multiply or add counted in the loop read as the K loop (SSE integer code, "
            "as the compiler makes of scalar integer C, is not counted)" if unranked
            else rows[0]["error"]))
    notes = list(notes) + model_notes
    if unranked:
        notes.append(f"'{_NO_MULADD}': the loop read as the K loop holds no multiply or "
                     f"add the counts know (SSE integer code is not counted)")
    if any(s.is_vla for s in specs):
        notes.append("flops per cycle of scalable tiles count vectors (VL/32 fp32 lanes "
                     "each), as the code's counts do")
    if any(r["predicted_flops_per_cycle"] and r["predicted_utilisation"] is None for r in rows):
        notes.append("FMA use not given where the object code does not hold the model's "
                     "FMA instructions (for scalar C on x86-64 the compiler emits SSE "
                     "multiplies and adds, and the register count is the model's, of "
                     "scalars): those rows are ranked by predicted flops per cycle alone")
    mc = next((r.get("mcpu") for r in rows if r.get("mcpu")), mcpu)
    return {"isa": isa, "types": types, "predicted": True, "mcpu": mc, "rows": rows,
            "notes": notes,
            "leader": rows[0]["name"], "default": default.name if default is not None else None}


def search_blocking(kernel, problems, threads: int = 1, *, rounds: int = 5,
                    min_time: float = 0.02, seed: int = 0) -> list[dict]:
    """Time ``kernel`` on ``problems`` with KC, MC, NC scaled around the model's choice
    (x0.5, x1, x1.5/x2), all blockings interleaved in the same rounds; returns one row
    per blocking (kc, mc, nc, model, speed relative to the model's blocking with its
    interval), fastest first. The model's choice is gemm()'s for ``threads`` threads at
    the deepest K of ``problems`` (:func:`microkernel.gemm.blocking_for`)."""
    from . import bench
    from .gemm import blocking_for
    from .timing import Rounds
    base = blocking_for(kernel, threads, max((p.k for p in problems), default=None))
    entries, seen = [], {}
    for fk, fm, fn in [(1, 1, 1), (0.5, 1, 1), (1.5, 1, 1), (1, 0.5, 1), (1, 2, 1),
                       (1, 1, 0.5), (0.5, 2, 1), (1.5, 0.5, 1)]:
        kc = max(8, int(base.kc * fk))
        mc = max(kernel.mr, int(base.mc * fm) // kernel.mr * kernel.mr)
        nc = max(kernel.nr, int(base.nc * fn) // kernel.nr * kernel.nr)
        if (kc, mc, nc) in seen:
            continue
        label = f"kc={kc},mc={mc},nc={nc}"
        seen[(kc, mc, nc)] = label
        entries.append(bench.GemmEntry(label, kernel, base.replace(kc=kc, mc=mc, nc=nc)))
    r = Rounds(bench.gemm_contenders(entries, problems, threads=threads, peers=(), seed=seed),
               min_time=min_time, pause=0.3 if threads > 1 else 0.0, seed=seed)
    for _ in range(rounds):
        r.round()
    model = entries[0].label
    rel = stats.compare(r.matrices([e.label for e in entries]), model)
    rows = [{"kc": e.blocking.kc, "mc": e.blocking.mc, "nc": e.blocking.nc,
             "model": e.label == model, "vs_model": rel[e.label].as_dict()} for e in entries]
    return sorted(rows, key=lambda x: -x["vs_model"]["point"])
