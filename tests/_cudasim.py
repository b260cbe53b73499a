"""numba's CUDA simulator for the GPU test modules (test_gpu_sim, test_gpu_simt,
test_mma_sim): import this first, before anything that imports numba. It also holds
the float64 reference and the error bound that test_gpu_sim and test_gpu_simt check
against.

``NUMBA_ENABLE_CUDASIM`` must be set before numba is first imported, so it is set
here (``setdefault``: run with ``NUMBA_ENABLE_CUDASIM=0`` on a machine with a GPU
to run the very same tests on the real device). The importing module is skipped
when numba-cuda (the ``[gpu]`` extra) is not installed, and when numba was already
imported without the simulator and no GPU is present.
"""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest  # noqa: E402

cuda = pytest.importorskip("numba.cuda", reason="the [gpu] extra (numba-cuda) is not installed")

#: True under the simulator, False on a real GPU.
SIM = bool(cuda.config.ENABLE_CUDASIM)
if not SIM and not cuda.is_available():
    pytest.skip("numba was imported without the simulator and there is no GPU",
                allow_module_level=True)


def reference(A, B, C0, alpha, beta):
    """alpha A B + beta C0 in float64 (C0 not read when beta == 0)."""
    import numpy as np
    r = alpha * (A.astype(np.float64) @ B.astype(np.float64))
    if beta != 0:
        r = r + beta * C0.astype(np.float64)
    return r


def error_bound(A, B, C0, alpha, beta):
    """The port's elementwise bound on ``|C - reference|``:
    ``C_BOUND (K+2) u (|alpha| |A||B| + |beta| |C0|)``."""
    import numpy as np
    from microkernel.gpu import port as gp
    k = A.shape[1]
    s = abs(alpha) * (np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64))
    if beta != 0:
        s = s + abs(beta) * np.abs(C0.astype(np.float64))
    return gp.C_BOUND * (k + 2) * gp.U * s
