"""Every code block of README.md runs (as numba-cuda cuts its docs examples out of
tests): the python block as written, each bash line with `.venv/bin/microkernel`
meaning this interpreter's package, in a scratch directory. The two commands at the
top: the main job runs (restricted to a short race), the test command is the one CI
runs. A block that needs an ISA this CPU lacks is skipped, and says which."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import microkernel as mk

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", README, re.S | re.M)


def _blocks(lang):
    return [body for kind, body in BLOCKS if kind == lang]


def test_readme_is_short_and_starts_with_the_two_commands():
    assert len(README.splitlines()) <= 125
    first = BLOCKS[0][1].splitlines()
    assert [ln.split("#")[0].strip() for ln in first] == ["bash scripts/sweep.sh",
                                                        "bash scripts/test.sh"]
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.slow
def test_the_main_job_runs(tmp_path):
    """scripts/sweep.sh as the README gives it, with extra arguments (which it passes
    to the sweep) that keep the race short and the outputs out of the tree."""
    out = tmp_path / "s.json"
    isa = mk.probe().best_isa
    lanes = mk.tile.ISAS[isa].lanes or 1
    res = subprocess.run(["bash", "scripts/sweep.sh", "--mr", "4", "--nr", f"{lanes},{2 * lanes}",
                          "--rounds", "3", "--budget", "5", "--json", str(out),
                          "--plot", str(tmp_path / "s.png")],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "ISAs (CPU and OS)" in res.stdout            # the probe first
    assert ("winner: " in res.stdout) or ("tie: " in res.stdout)
    assert out.is_file() and (tmp_path / "s.png").is_file()


def test_the_python_block_runs(tmp_path):
    (code,) = _blocks("python")
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "scalar" in res.stdout


def _run_bash(block, tmp_path):
    for line in block.splitlines():
        cmd = line.split("  #")[0].strip()
        if not cmd:
            continue
        cmd = cmd.replace(".venv/bin/microkernel", f"{sys.executable} -m microkernel")
        res = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, capture_output=True, text=True,
                             timeout=600, env={**os.environ,
                                               "MICROKERNEL_CACHE_DIR": os.environ.get(
                                                   "MICROKERNEL_CACHE_DIR", str(tmp_path / "c"))})
        assert res.returncode == 0, f"$ {cmd}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


@pytest.mark.parametrize("index", range(1, len(_blocks("bash"))))
def test_the_bash_blocks_run(index, tmp_path):
    block = _blocks("bash")[index]
    needs = set(re.findall(r"\b(avx512|avx2|neon|sve)_\d+x\d", block)) - {"avx512"}
    missing = sorted(i for i in needs if i not in mk.probe().isas)
    if missing and "--predict" not in block:
        pytest.skip(f"this block runs {', '.join(missing)} tiles, which this CPU cannot run")
    if "port " in block:
        pytest.importorskip("numba")
    _run_bash(block, tmp_path)
