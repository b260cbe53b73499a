"""Measured cycles per k step, derived from the FMA peak, on the project's timing engine.

``perf stat -e cycles`` would give the core clock directly, but it is not available
on virtual machines such as this project's. So the clock comes from the FMA peak loop
of the same ISA (for ``scalar``, of the best usable vector ISA, because the scalar
peak loop built without -mfma is not throughput-bound): that loop runs independent
FMA chains, more than FMA latency x FMA units (12 ymm / 16 zmm chains against 4 x 2),
so it retires ``fma_units`` FMAs per cycle and, in every round r::

    GHz_r             = peak_r GFLOP/s / (2 flops x lanes x fma_units)
    cycles per k_r    = (2 x MR x NR flops per k step) x GHz_r / kernel_r GFLOP/s
                      = (MR x NR / lanes / fma_units) x peak_r / kernel_r

The peak loop and the micro-kernel in L1 are the two contenders of one L1 race
(:func:`microkernel.bench.l1_contenders`), timed in the same interleaved, shuffled
rounds by :class:`microkernel.timing.Rounds` and read with
:func:`microkernel.bench.l1_figures`; every figure is the **median over rounds** with
its 95% percentile-bootstrap interval (:func:`microkernel.stats.bootstrap`), the
cycles per k of the per-round ratio peak_r / kernel_r (paired by round, so a slow
spell that hits both cancels). ``fma_units`` comes from the probe (2 on Zen 3 and on
Intel server cores). A micro-kernel call of ``kc`` k steps includes one epilogue
(kc=256: under 2%).
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess

import numpy as np

from ..tile import TileSpec

__all__ = ["Measured", "measure", "runnable", "perf_cycles_available"]


@dataclasses.dataclass(frozen=True)
class Measured:
    """Measured cycles per k step (see the module docstring). GFLOP/s and cycles are
    medians over ``rounds``, each with its 95% bootstrap interval as a (lo, hi) pair in
    ``<figure>_interval`` (:meth:`to_dict` writes it as ``<figure>_lo``/``_hi``);
    ``fraction_of_peak`` and its interval are None when the peak is another ISA's
    (scalar); ``peak_rounds`` / ``kernel_rounds`` are the per-round GFLOP/s."""
    kernel_gflops: float
    peak_gflops: float
    peak_isa: str
    ghz: float
    cycles_per_k: float
    fraction_of_peak: float | None
    method: str
    kc: int
    reps: int
    rounds: int
    kernel_gflops_interval: tuple[float, float] = (0.0, 0.0)
    peak_gflops_interval: tuple[float, float] = (0.0, 0.0)
    ghz_interval: tuple[float, float] = (0.0, 0.0)
    cycles_per_k_interval: tuple[float, float] = (0.0, 0.0)
    fraction_of_peak_interval: tuple[float, float] | None = None
    peak_rounds: tuple = ()
    kernel_rounds: tuple = ()
    statistic: str = "median over rounds, 95% percentile-bootstrap interval"

    def to_dict(self) -> dict:
        """The fields in order, JSON-ready: each ``<figure>_interval`` as
        ``<figure>_lo`` and ``<figure>_hi`` (None without the interval), tuples as lists."""
        d = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_interval"):
                figure = f.name.removesuffix("_interval")
                d[figure + "_lo"], d[figure + "_hi"] = value if value is not None else (None, None)
            else:
                d[f.name] = list(value) if isinstance(value, tuple) else value
        return d


def perf_cycles_available() -> bool:
    """Whether ``perf stat -e cycles`` counts here (not on most virtual machines)."""
    exe = shutil.which("perf")
    if not exe:
        return False
    res = subprocess.run([exe, "stat", "-x,", "-e", "cycles", "true"], capture_output=True,
                         text=True, check=False)
    return res.returncode == 0 and "<not supported>" not in res.stderr \
        and "<not counted>" not in res.stderr


def runnable(spec: TileSpec) -> tuple[bool, str]:
    """(True, "") when this CPU/OS runs ``spec.isa``, else (False, the reason)."""
    try:
        from ..dispatch import usable_isas
        usable = usable_isas()
    except Exception as exc:          # noqa: BLE001 - report, do not crash the listing
        return False, f"not runnable here: {exc}"
    if spec.isa not in usable:
        forced = os.environ.get("MICROKERNEL_ISA", "").strip()
        return False, (f"not runnable here: {spec.isa} not supported by this CPU"
                       + (f" or outside MICROKERNEL_ISA={forced}" if forced else ""))
    return True, ""


def measure(spec: TileSpec | str, *, kc: int = 256, reps: int = 1000, rounds: int = 7,
            min_time: float | None = None, peak_iters: int = 200_000,
            seed: int = 0) -> Measured:
    """Time the micro-kernel in L1 against the FMA peak and convert to cycles per k
    step (module docstring). ``reps`` calls of ``kc`` k steps make one call of the
    L1 contender, ``peak_iters`` iterations one of the peak; the engine calibrates
    loops so that each sample lasts ``min_time`` seconds (default
    :data:`microkernel.timing.DEFAULT_MIN_TIME`), then takes ``rounds`` rounds.

    Raises IsaUnavailableError when this CPU/OS cannot run ``spec.isa``, ValueError
    for ``rounds`` < 1.
    """
    from .. import bench, stats
    from ..dispatch import default_tile, get_kernel, usable_isas
    from ..probe import probe
    from ..tile import ISAS
    from ..timing import DEFAULT_MIN_TIME, Rounds
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    spec = TileSpec.from_name(spec) if isinstance(spec, str) else spec
    kernel = get_kernel(spec)
    peak_isa = spec.isa
    if spec.isa == "scalar":
        # fp32 ISAs only (IsaInfo.general): a typed ISA's peak loop (VNNI, AMX) counts
        # other operations than the fp32 FMAs the clock is derived from
        vec = [i for i in usable_isas() if i != "scalar" and ISAS[i].lanes and ISAS[i].general]
        peak_isa = vec[-1] if vec else "scalar"
    peak_kernel = kernel if peak_isa == spec.isa else get_kernel(default_tile(peak_isa))
    info = probe()          # its fma_units are of its best ISA only
    units = (info.fma_units if peak_isa == info.best_isa else None) or ISAS[peak_isa].fma_units
    lanes = ISAS[peak_isa].lanes
    r = Rounds(bench.l1_contenders([kernel], peak_kernel, kc=kc, reps=reps,
                                   peak_iters=peak_iters),
               min_time=min_time or DEFAULT_MIN_TIME, seed=seed)
    for _ in range(rounds):
        r.round()
    fig = bench.l1_figures(r, [kernel.label])
    peak, kern = fig[bench.PEAK], fig[kernel.label]
    peak_g, kern_g = np.asarray(peak["rounds"]), np.asarray(kern["rounds"])
    flops_per_cycle = 2 * lanes * units
    scale = (2 * kernel.mr * kernel.nr) / flops_per_cycle     # cycles per k at the peak
    cyc = stats.bootstrap((peak_g / kern_g)[None, :])          # median of peak_r / kernel_r
    same = peak_isa == spec.isa
    method = (f"measured (derived from the FMA peak): clock {peak['gflops'] / flops_per_cycle:.2f}"
              f" GHz = {peak['gflops']:.1f} GFLOP/s / ({flops_per_cycle} flops/cycle: "
              f"{peak_isa} {lanes} lanes x 2 x {units} FMA units); peak and kernel in the "
              f"same {rounds} interleaved rounds, medians with 95% intervals")
    return Measured(
        kernel_gflops=kern["gflops"], peak_gflops=peak["gflops"], peak_isa=peak_isa,
        ghz=peak["gflops"] / flops_per_cycle, cycles_per_k=scale * cyc.point,
        fraction_of_peak=kern["pct_peak"] / 100 if same else None,
        method=method, kc=kc, reps=reps, rounds=rounds,
        kernel_gflops_interval=(kern["gflops_lo"], kern["gflops_hi"]),
        peak_gflops_interval=(peak["gflops_lo"], peak["gflops_hi"]),
        ghz_interval=(peak["gflops_lo"] / flops_per_cycle, peak["gflops_hi"] / flops_per_cycle),
        cycles_per_k_interval=(scale * cyc.lo, scale * cyc.hi),
        fraction_of_peak_interval=((kern["pct_peak_lo"] / 100, kern["pct_peak_hi"] / 100)
                                   if same else None),
        peak_rounds=tuple(float(x) for x in peak_g), kernel_rounds=tuple(float(x) for x in kern_g))
