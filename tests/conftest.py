"""Shared fixtures: the kernels this machine can run, named by their tile; the operands
of a matrix instruction (the NVIDIA and AMD fragment models' tests)."""
import numpy as np
import pytest

import microkernel as mk


def runnable_kernels():
    return mk.kernels()


@pytest.fixture(params=runnable_kernels())
def kernel(request):
    return mk.get_kernel(request.param)


@pytest.fixture
def mma_operands():
    """``mma_operands(ins, draw)``: float32 A (m x k), B (k x n) and C (m x n) of the
    matrix instruction ``ins``, each drawn by ``draw(shape)``, in that order."""
    def operands(ins, draw):
        return tuple(np.asarray(draw(shape), dtype=np.float32)
                     for shape in ((ins.m, ins.k), (ins.k, ins.n), (ins.m, ins.n)))
    return operands
