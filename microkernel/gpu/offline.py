"""Compiling numba CUDA kernels to PTX on a machine without a GPU."""
from __future__ import annotations

__all__ = ["offline_device"]


class offline_device:
    """Lets numba compile device functions without a GPU: numba-cuda's
    ``Dispatcher.compile_device`` asks the current device for its compute
    capability (the original kernel's staging device functions need it). With no
    driver, answer ``cc`` for the duration of ``compile_ptx``; with a GPU, do
    nothing."""

    def __init__(self, cc):
        self.cc = tuple(cc)
        self.saved = None

    def __enter__(self):
        from numba.cuda import dispatcher as nd
        try:
            nd.get_current_device()
            return self
        except Exception:  # noqa: BLE001 - no driver / no device
            cc = self.cc

            class _Dev:
                compute_capability = cc
            self.saved = nd.get_current_device
            nd.get_current_device = lambda: _Dev()
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            from numba.cuda import dispatcher as nd
            nd.get_current_device = self.saved
        return False
