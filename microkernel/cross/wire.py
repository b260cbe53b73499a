"""The binary case format shared with ``c_src/harness.c`` (its header comment is the
protocol's documentation; this module is the Python side of it).

stdin of the harness: ``b"MKCASES1"``, int64 ncases, then per case a 216-byte header
(:data:`HDR`, ``struct mk_hcase`` in harness.c) and the A, B and C buffers as
little-endian float32. stdout: text info lines (:func:`parse_info`), a line
``results <ncases>``, then per case int64 status, int64 len_c and len_c float32
(:func:`read_results`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["HDR", "MAGIC", "ST_OK", "ST_REFUSED", "ST_UNKNOWN", "ST_OUTSIDE", "Prepared",
           "prepare", "encode", "parse_info", "split_output", "read_results"]

#: the stream's first 8 bytes
MAGIC = b"MKCASES1"
#: harness statuses (c_src/harness.c); the driver's own codes are -1 / -2
ST_OK, ST_REFUSED, ST_UNKNOWN, ST_OUTSIDE = 0, -100, -101, -102

#: ``struct mk_hcase``: kernel name, sizes, per operand (rs, cs, offset of X(0, 0),
#: buffer length in floats, byte alignment past 64), blocking, threads, alpha, beta
HDR = np.dtype([
    ("kernel", "S32"), ("m", "<i8"), ("n", "<i8"), ("k", "<i8"),
    ("rs_a", "<i8"), ("cs_a", "<i8"), ("off_a", "<i8"), ("len_a", "<i8"), ("align_a", "<i8"),
    ("rs_b", "<i8"), ("cs_b", "<i8"), ("off_b", "<i8"), ("len_b", "<i8"), ("align_b", "<i8"),
    ("rs_c", "<i8"), ("cs_c", "<i8"), ("off_c", "<i8"), ("len_c", "<i8"), ("align_c", "<i8"),
    ("kc", "<i8"), ("mc", "<i8"), ("nc", "<i8"), ("threads", "<i8"),
    ("alpha", "<f4"), ("beta", "<f4"),
])
assert HDR.itemsize == 216


def _span(x: np.ndarray):
    """(flat copy of the memory a 2-D float32 view spans, offset of x[0, 0], rs, cs,
    alignment in bytes past 64 of the span's start)."""
    if x.size == 0:
        return np.zeros(0, np.float32), 0, max(x.shape[1], 1), 1, 0
    sr, sc = (s // 4 for s in x.strides)
    r, c = x.shape
    flip = x[::-1 if sr < 0 else 1, ::-1 if sc < 0 else 1]
    span = (r - 1) * abs(sr) + (c - 1) * abs(sc) + 1
    flat = np.lib.stride_tricks.as_strided(flip, shape=(span,), strides=(4,)).copy()
    off = (r - 1) * abs(sr) * (sr < 0) + (c - 1) * abs(sc) * (sc < 0)
    return flat, off, sr, sc, (flip.ctypes.data % 64) // 4 * 4


def _base_flat(base: np.ndarray) -> np.ndarray:
    """A writeable 1-D view of a contiguous (C or Fortran order) buffer's memory."""
    assert base.flags.c_contiguous or base.flags.f_contiguous
    return np.lib.stride_tricks.as_strided(base, shape=(base.size,), strides=(4,))


@dataclasses.dataclass
class Prepared:
    """One case as sent: the operands (``C`` a view into ``base_c``, whose memory is
    ``c_flat``), what C was before the call (``c_sent``), the guard mask, and whether
    the harness must refuse it (its ISA not cleared on this CPU)."""
    kernel: str
    case: object
    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    C0: np.ndarray
    base_c: np.ndarray
    mask_c: np.ndarray
    c_flat: np.ndarray
    c_sent: np.ndarray
    expect_refused: bool


def prepare(kernel: str, case, seed: int, expect_refused: bool,
            blocking: tuple[int, int, int]) -> tuple[Prepared, bytes]:
    """(Prepared, header bytes + A, B, C buffers) for one
    :class:`microkernel.validate.Case`; ``blocking`` (kc, mc, nc) unless the case
    sets its own."""
    from ..validate import make_operands
    rng = np.random.default_rng(seed)
    A, B, C, C0, base_c, mask_c = make_operands(case, rng)
    fa, oa, rsa, csa, ala = _span(A)
    fb, ob, rsb, csb, alb = _span(B)
    c_flat = _base_flat(base_c)
    sc = C.strides
    oc = (C.ctypes.data - base_c.ctypes.data) // 4 if C.size else 0
    rsc, csc = (sc[0] // 4, sc[1] // 4) if C.size else (max(C.shape[1], 1), 1)
    alc = (base_c.ctypes.data % 64) // 4 * 4
    kc, mc, nc = case.blocking or blocking
    h = np.zeros((), HDR)
    h["kernel"] = kernel.encode()
    for key, val in dict(m=case.m, n=case.n, k=case.k,
                         rs_a=rsa, cs_a=csa, off_a=oa, len_a=fa.size, align_a=ala,
                         rs_b=rsb, cs_b=csb, off_b=ob, len_b=fb.size, align_b=alb,
                         rs_c=rsc, cs_c=csc, off_c=oc, len_c=c_flat.size, align_c=alc,
                         kc=kc, mc=mc, nc=nc, threads=case.threads,
                         alpha=case.alpha, beta=case.beta).items():
        h[key] = val
    blob = b"".join([h.tobytes(), fa.astype("<f4").tobytes(), fb.astype("<f4").tobytes(),
                     np.ascontiguousarray(c_flat).astype("<f4").tobytes()])
    prep = Prepared(kernel, case, A, B, C, C0, base_c, mask_c, c_flat, c_flat.copy(),
                    expect_refused)
    return prep, blob


def encode(blobs) -> bytes:
    """The whole stdin stream for the case blobs of :func:`prepare`."""
    blobs = list(blobs)
    return MAGIC + np.int64(len(blobs)).astype("<i8").tobytes() + b"".join(blobs)


def parse_info(text: str) -> dict:
    """The info block (text lines before ``results``) as a dict: probe (key=value
    pairs), isas, chosen, observed (VL bits or None), kernels (name -> key=value)."""
    info = {"kernels": {}}
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "probe":
            info["probe"] = dict(kv.split("=", 1) for kv in rest.split())
        elif key == "isas":
            info["isas"] = [s for s in rest.split(",") if s]
        elif key == "chosen":
            info["chosen"] = rest.strip()
        elif key == "observed_vl_bits":
            info["observed"] = None if rest.strip() == "none" else int(rest)
        elif key == "kernel":
            name, *kvs = rest.split()
            info["kernels"][name] = {k: v for k, v in (kv.split("=", 1) for kv in kvs)}
    return info


def split_output(out: bytes) -> tuple[str, int | None]:
    """(info text, offset of the first binary result or None when the harness never
    printed its ``results`` line)."""
    marker = out.find(b"results ")
    if marker < 0:
        return out.decode(errors="replace"), None
    return out[:marker].decode(errors="replace"), out.index(b"\n", marker) + 1


def read_results(out: bytes, pos: int, count: int):
    """Yield (status, C buffer as float32) for up to ``count`` cases from offset
    ``pos``; stops early (fewer items) when the stream is truncated."""
    for _ in range(count):
        if pos + 16 > len(out):
            return
        status, n = np.frombuffer(out, "<i8", 2, pos)
        pos += 16
        if pos + 4 * int(n) > len(out):
            return
        yield int(status), np.frombuffer(out, "<f4", int(n), pos)
        pos += 4 * int(n)
