"""The binary case format shared with ``c_src/harness.c`` (its header comment is the
protocol's documentation; this module is the Python side of it).

stdin of the harness: ``b"MKCASES2"``, int64 ncases, then per case a 272-byte header
(:data:`HDR`, ``struct mk_hcase`` in harness.c: kernel, input types, sizes, strides,
element sizes, alpha and beta as float64) and the A, B and C buffers in their element
types (microkernel.dtypes: float32, bf16 and fp16 bit patterns, int8, uint8, int32),
little-endian. stdout: text info lines (:func:`parse_info`), a line ``results
<ncases>``, then per case int64 status, int64 len_c and len_c elements of C's type
(:func:`read_results`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["HDR", "MAGIC", "ST_OK", "ST_REFUSED", "ST_UNKNOWN", "ST_OUTSIDE", "ST_TYPES",
           "Prepared", "prepare", "encode", "parse_info", "split_output", "read_results"]

#: the stream's first 8 bytes
MAGIC = b"MKCASES2"
#: harness statuses (c_src/harness.c); the driver's own codes are -1 / -2
ST_OK, ST_REFUSED, ST_UNKNOWN, ST_OUTSIDE, ST_TYPES = 0, -100, -101, -102, -103

#: ``struct mk_hcase``: kernel name, input types, sizes, per operand (rs, cs, offset of
#: X(0, 0), buffer length in elements, byte alignment past 64), blocking, threads, the
#: element sizes of A, B and C in bytes, alpha, beta
HDR = np.dtype([
    ("kernel", "S48"), ("types", "S8"), ("m", "<i8"), ("n", "<i8"), ("k", "<i8"),
    ("rs_a", "<i8"), ("cs_a", "<i8"), ("off_a", "<i8"), ("len_a", "<i8"), ("align_a", "<i8"),
    ("rs_b", "<i8"), ("cs_b", "<i8"), ("off_b", "<i8"), ("len_b", "<i8"), ("align_b", "<i8"),
    ("rs_c", "<i8"), ("cs_c", "<i8"), ("off_c", "<i8"), ("len_c", "<i8"), ("align_c", "<i8"),
    ("kc", "<i8"), ("mc", "<i8"), ("nc", "<i8"), ("threads", "<i8"),
    ("esize_a", "<i8"), ("esize_b", "<i8"), ("esize_c", "<i8"),
    ("alpha", "<f8"), ("beta", "<f8"),
])
assert HDR.itemsize == 272


def _span(x: np.ndarray):
    """(flat copy of the memory a 2-D view spans, offset of x[0, 0], rs, cs in elements,
    alignment in bytes past 64 of the span's start)."""
    e = x.itemsize
    if x.size == 0:
        return np.zeros(0, x.dtype), 0, max(x.shape[1], 1), 1, 0
    sr, sc = (s // e for s in x.strides)
    r, c = x.shape
    flip = x[::-1 if sr < 0 else 1, ::-1 if sc < 0 else 1]
    span = (r - 1) * abs(sr) + (c - 1) * abs(sc) + 1
    flat = np.lib.stride_tricks.as_strided(flip, shape=(span,), strides=(e,)).copy()
    off = (r - 1) * abs(sr) * (sr < 0) + (c - 1) * abs(sc) * (sc < 0)
    return flat, off, sr, sc, (flip.ctypes.data % 64) // e * e


def _base_flat(base: np.ndarray) -> np.ndarray:
    """A writeable 1-D view of a contiguous (C or Fortran order) buffer's memory."""
    assert base.flags.c_contiguous or base.flags.f_contiguous
    return np.lib.stride_tricks.as_strided(base, shape=(base.size,), strides=(base.itemsize,))


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
    types: str = "f32"


def prepare(kernel: str, case, seed: int, expect_refused: bool,
            blocking: tuple[int, int, int], types: str = "f32") -> tuple[Prepared, bytes]:
    """(Prepared, header bytes + A, B, C buffers) for one
    :class:`microkernel.validate.Case` of input ``types`` (microkernel.dtypes);
    ``blocking`` (kc, mc, nc) unless the case sets its own."""
    from ..validate import make_operands
    rng = np.random.default_rng(seed)
    A, B, C, C0, base_c, mask_c = make_operands(case, rng, types)
    fa, oa, rsa, csa, ala = _span(A)
    fb, ob, rsb, csb, alb = _span(B)
    c_flat = _base_flat(base_c)
    ec = C.itemsize
    sc = C.strides
    oc = (C.ctypes.data - base_c.ctypes.data) // ec if C.size else 0
    rsc, csc = (sc[0] // ec, sc[1] // ec) if C.size else (max(C.shape[1], 1), 1)
    alc = (base_c.ctypes.data % 64) // ec * ec
    kc, mc, nc = case.blocking or blocking
    h = np.zeros((), HDR)
    h["kernel"] = kernel.encode()
    h["types"] = types.encode()
    for key, val in dict(m=case.m, n=case.n, k=case.k,
                         rs_a=rsa, cs_a=csa, off_a=oa, len_a=fa.size, align_a=ala,
                         rs_b=rsb, cs_b=csb, off_b=ob, len_b=fb.size, align_b=alb,
                         rs_c=rsc, cs_c=csc, off_c=oc, len_c=c_flat.size, align_c=alc,
                         kc=kc, mc=mc, nc=nc, threads=case.threads,
                         esize_a=A.itemsize, esize_b=B.itemsize, esize_c=ec,
                         alpha=case.alpha, beta=case.beta).items():
        h[key] = val
    blob = b"".join([h.tobytes(), fa.tobytes(), fb.tobytes(),
                     np.ascontiguousarray(c_flat).tobytes()])
    prep = Prepared(kernel, case, A, B, C, C0, base_c, mask_c, c_flat, c_flat.copy(),
                    expect_refused, types)
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
        elif key == "features":
            info["features"] = {k: v == "1" for k, v in (kv.split("=", 1) for kv in rest.split())}
        elif key == "observed_vl_bits":
            info["observed"] = None if rest.strip() == "none" else int(rest)
        elif key == "smopa32":
            info["smopa32_ok"] = rest.strip() == "ok"
        elif key == "observed_svl_bits":
            info["observed_svl"] = None if rest.strip() == "none" else int(rest)
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


def read_results(out: bytes, pos: int, dtypes):
    """Yield (status, C buffer in its dtype) for each case, ``dtypes`` the C dtype per
    case (float32 or int32), from offset ``pos``; stops early (fewer items) when the
    stream is truncated."""
    for dt in dtypes:
        dt = np.dtype(dt).newbyteorder("<")
        if pos + 16 > len(out):
            return
        status, n = np.frombuffer(out, "<i8", 2, pos)
        pos += 16
        if pos + dt.itemsize * int(n) > len(out):
            return
        yield int(status), np.frombuffer(out, dt, int(n), pos)
        pos += dt.itemsize * int(n)
