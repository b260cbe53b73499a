"""Workloads: shapes that coincide (once scaled, or given twice) are timed once, since
the timing engine keys its samples by a shape's label."""
import json

import pytest

from microkernel import workloads
from microkernel.cli import main


def test_deepbench_shapes_that_coincide_once_scaled_are_kept_once():
    every = workloads.deepbench(8, merge=False)
    assert len(every) == len(workloads.deepbench(1)) == 13
    # 3072x1500x1024 and 3072x1500x128 (and their n = 1 twins) meet at scale 8
    assert workloads.repeats(every) == {"384x187x128": 2, "384x1x128": 2}
    assert workloads.merged("deepbench", 8) == workloads.repeats(every)
    assert workloads.merged("square", 8) == {} == workloads.merged("deepbench", 1)
    merged = workloads.deepbench(8)
    labels = [p.label for p in merged]
    assert len(labels) == len(set(labels)) == 11
    assert labels == list(dict.fromkeys(p.label for p in every))    # first kept, in order
    for scale in (1, 2, 4, 16, 64):
        assert len(workloads.deepbench(scale)) == 13 and not workloads.repeats(
            workloads.deepbench(scale, merge=False))


def test_a_repeated_square_size_is_one_shape():
    assert [p.label for p in workloads.square((24, 40, 24))] == ["24x24x24", "40x40x40"]
    p, q = workloads.Problem(8, 8, 8), workloads.Problem(8, 8, 8, a_t=True)
    assert workloads.unique([p, q, p]) == [p, q]      # a transposed operand is another shape


@pytest.mark.parametrize("argv", [
    ["--sizes", "24,24"],
    ["--sizes", "24", "--workload", "square"],        # the workload has 24^3 too
])
def test_compare_times_a_repeated_shape_once(argv, monkeypatch, tmp_path):
    monkeypatch.setattr(workloads, "load",
                        lambda name, scale=1: [workloads.Problem(24, 24, 24),
                                               workloads.Problem(32, 24, 16)])
    out = tmp_path / "c.json"
    assert main(["compare", "--kernels", "scalar_4x4", *argv, "--rounds", "2",
                 "--min-time", "0.001", "--peers", "numpy", "--json", str(out)]) == 0
    shapes = [s["shape"] for s in json.loads(out.read_text())["shapes"]]
    assert shapes[0] == "24x24x24" and len(shapes) == len(set(shapes))


def test_sweep_says_which_deepbench_shapes_it_merged(monkeypatch, capsys):
    from test_cli import _result
    from microkernel import sweep as sw
    seen = {}

    def fake(*a, **k):
        seen.update(k)
        res = _result([])
        res["scale"] = k["scale"]
        res["merged_problems"] = workloads.merged("deepbench", k["scale"])
        return res
    monkeypatch.setattr(sw, "sweep", fake)
    assert main(["sweep", "--scale", "8"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("--scale 8 makes some DeepBench shapes the same; each is timed once: "
            "384x1x128 (2 shapes), 384x187x128 (2 shapes)") in text
