"""Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama...)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import openai
from openai.types import CreateEmbeddingResponse

from observations.deadline import deadline_client
from observations.embed_base import (
    EmbeddingEndpointFailed,
    Vectors,
    check_texts,
    empty_vectors,
)


class OpenAIEmbedder:
    """Embeds through `POST {base_url}/embeddings` with the `openai` client.

    Rows are L2-normalized here whatever the server returns. `dim` is what the model
    returns; a reply of another length is an error (set `send_dimensions` for models that
    can shorten their vectors, such as text-embedding-3-*). Failures after the client's own
    `max_retries` (with backoff) raise EmbeddingEndpointFailed naming the endpoint.
    `timeout` bounds each request, its response body included (:mod:`observations.deadline`).
    An empty `api_key` is sent as a placeholder, for local servers that need none.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        dim: int,
        timeout: float = 30.0,
        batch_size: int = 128,
        *,
        max_retries: int = 2,
        send_dimensions: bool = False,
    ) -> None:
        if dim < 1 or batch_size < 1:
            raise ValueError("dim and batch_size must be at least 1")
        if not base_url or not model:
            raise ValueError("base_url and model are required")
        self.model = model
        self.dim = dim
        self.base_url = base_url
        self.batch_size = batch_size
        self._send_dimensions = send_dimensions
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "unused",
            timeout=timeout,
            max_retries=max_retries,
            http_client=deadline_client(timeout),
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return empty_vectors(self.dim)
        chunks = [
            self._embed_batch(items[start : start + self.batch_size])
            for start in range(0, len(items), self.batch_size)
        ]
        return np.concatenate(chunks)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        return self._parse(self._request(texts), len(texts))

    def _request(self, texts: list[str]) -> CreateEmbeddingResponse:
        try:
            return self._client.embeddings.create(
                model=self.model,
                input=texts,
                encoding_format="float",  # base64 is not offered by every compatible server
                dimensions=self.dim if self._send_dimensions else openai.omit,
            )
        except openai.APIError as exc:
            raise self._failed(f"embeddings request failed: {exc}") from exc
        except ValueError as exc:  # a body that is not JSON
            raise self._failed(f"reply is not JSON: {exc}") from exc

    def _parse(self, reply: CreateEmbeddingResponse, count: int) -> Vectors:
        try:
            # The client does not validate replies: a malformed one shows up right here.
            rows = sorted(reply.data, key=lambda item: item.index)
            indexes = [row.index for row in rows]
            lengths = sorted({len(row.embedding) for row in rows})
        except (AttributeError, TypeError) as exc:
            raise self._failed(f"reply is not a list of embeddings: {exc}") from exc
        if indexes != list(range(count)):
            raise self._failed(
                "reply does not hold one embedding per input", inputs=count, indexes=indexes
            )
        if lengths != [self.dim]:
            raise self._failed("reply has vectors of the wrong length", dim=self.dim, got=lengths)
        try:  # float64 first: components near 1e20 or 1e-20 keep a usable norm
            matrix = np.asarray([row.embedding for row in rows], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise self._failed(f"reply holds a non-numeric vector: {exc}") from exc
        if matrix.ndim != 2:
            raise self._failed("reply holds a vector that is not a flat list of numbers")
        norms = np.linalg.norm(matrix, axis=1)
        if not np.isfinite(norms).all() or not norms.all():
            raise self._failed("reply holds a zero or non-finite vector")
        return (matrix / norms[:, None]).astype(np.float32)

    def _failed(self, message: str, **fields: object) -> EmbeddingEndpointFailed:
        return EmbeddingEndpointFailed(
            message, endpoint=f"{self.base_url.rstrip('/')}/embeddings", model=self.model, **fields
        )
