"""The preamble of the GPU bench scripts (gpu_h200.py, gpu_simt.py, gpu_mma.py).

Import it before numba or anything from ``microkernel``: the scripts are run as
``python3 bench/<script>.py`` from the repository root, so this directory is on
``sys.path``. It

- defaults ``NUMBA_ENABLE_CUDASIM`` to 0 (the real GPU) before numba is imported;
- aliases ``np.row_stack = np.vstack`` where numpy (>= 2.5) lacks it: numba-cuda
  0.30.4 dies at its first compile without it (:data:`ROW_STACK_SHIM` records it);
- registers a bare ``microkernel`` package rooted at :data:`ROOT` / microkernel,
  bypassing ``microkernel/__init__`` (cffi), so that only ``microkernel.tile`` and
  ``microkernel.gpu`` get imported.
"""
import os
import pathlib
import sys
import types

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")

import numpy as np  # noqa: E402

ROW_STACK_SHIM = not hasattr(np, "row_stack")
if ROW_STACK_SHIM:                             # numba-cuda 0.30.4 vs numpy >= 2.5
    np.row_stack = np.vstack

#: The repository root.
ROOT = pathlib.Path(__file__).resolve().parents[1]


def bare_package(name: str, root) -> None:
    """Register ``name`` as a package rooted at the directory ``root`` without running
    its ``__init__``: its submodules import as ``name.gpu.front`` and so on."""
    pkg = types.ModuleType(name)
    pkg.__path__ = [str(root)]
    sys.modules[name] = pkg


if "microkernel" not in sys.modules:           # bypass microkernel/__init__ (cffi)
    bare_package("microkernel", ROOT / "microkernel")


def write_out(stem: str, data, md: str) -> None:
    """``$OUT/<stem>.json`` (data) and ``$OUT/<stem>.md`` (md; default ./out), and md
    printed."""
    import json
    out = pathlib.Path(os.environ.get("OUT") or "out")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(data, indent=1))
    (out / f"{stem}.md").write_text(md)
    print(md)


def nvidia_smi():
    """nvidia-smi's driver version, SM clocks (current, max) and power limit, one CSV
    line per GPU; None where nvidia-smi is missing or fails."""
    import subprocess
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.max.sm,power.limit",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001
        return None
