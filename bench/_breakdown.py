"""The table that bench/amx_breakdown.py and bench/nop_share.py print: builds of one
kernel (the real one, diagnostic variants) timed in the same interleaved rounds.

Imported by those scripts from their own directory (``python bench/X.py`` puts bench/
on ``sys.path``).
"""
import numpy as np

from microkernel import stats


def rows_against(r, names, ref: str = "kernel") -> dict:
    """``{shape: {name: row}}`` for the contenders ``names`` of the finished
    ``microkernel.timing.Rounds`` ``r``, printed one line each. A row holds the GFLOP/s
    (the contender's flop count over its time: ``gflops`` the point, ``lo`` / ``hi`` the
    95% bootstrap interval over rounds, ``rounds`` every sample) and ``time_vs_kernel``:
    its time over ``ref``'s, paired by round (the median of the per-round ratios)."""
    out = {}
    for shape in r.shapes:
        t_ref = np.asarray(r.times[(shape, ref)])
        rows = {}
        for name in names:
            t = np.asarray(r.times[(shape, name)])
            g = r.contender(shape, name).flops / t / 1e9
            iv = stats.bootstrap(g[None, :])
            rows[name] = {"gflops": iv.point, "lo": iv.lo, "hi": iv.hi, "rounds": g.tolist(),
                          "time_vs_kernel": float(np.median(t / t_ref))}
            print(f"{shape:>8} {name:<8} {iv.point:8.1f} GFLOP/s [{iv.lo:.1f}, {iv.hi:.1f}]"
                  f"  time {rows[name]['time_vs_kernel']:.3f} of the {ref}'s", flush=True)
        out[shape] = rows
    return out
