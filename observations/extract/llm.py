"""The ``llm`` extractor: user facts from any OpenAI-compatible chat endpoint.

How a session is extracted:

1. The fallback extractor (normally ``heuristic``) runs first; it is cheap and
   deterministic, and its output is needed either way.
2. The session's user/assistant turns are numbered and dated (:mod:`.llm_prompt`) and cut
   into chunks of at most ``max_chunk_chars`` characters (and ``max_chunk_tokens``, at a
   conservative 3 characters per token); each chunk is one request carrying the
   participants, the session's dates, the facts memory holds as current about its users
   (``SessionInput.known_beliefs``, numbered) and the rules (names not pronouns, absolute
   dates, cite turn numbers, name the beliefs a fact ends).
3. Each request asks for structured output in the configured form (``json_schema`` for
   OpenAI/vLLM, ``json_object`` + ``schema`` for the llama.cpp server, :mod:`.llm_schema`)
   and is retried on connection errors, timeouts, HTTP 408/409/429 and 5xx, at most
   ``max_retries`` times, sleeping ``backoff_initial * 2**attempt`` seconds, or the
   server's ``Retry-After`` when longer (capped at ``backoff_max``), through the
   injectable ``sleep``. ``timeout`` bounds each request, its response body included
   (:mod:`observations.deadline`).
4. The reply is validated (:mod:`.llm_schema`); cited turn numbers become event ids and
   speaker names become user ids (:mod:`.llm_facts`); facts that fail are dropped and
   counted in the ``llm_facts_extracted`` log line.

The LLM contributes **user facts only**. Agent experiences and the session summary are
taken from the fallback's output unchanged, and so are its episodic items for turns that
no LLM fact cites (information no fact captured). Any failure — connection error,
timeout, HTTP error, invalid JSON, schema violation, no usable fact in the whole session
— returns the fallback's own extraction (its name and version) with ``fallback_reason``
set, e.g. ``"llm_unreachable: Connection error. …"``. Nothing here reads the environment.

Construction: ``LLMExtractor(base_url=..., model=..., response_format="json_object",
fallback=HeuristicExtractor())`` (any ``LLMConfig`` field as a keyword), or
``LLMExtractor(LLMConfig(...), fallback=...)``; ``sleep`` replaces ``time.sleep`` for the
backoff (tests pass a recorder).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

import openai
import structlog

from ledger.errors import MemledgerError
from observations.deadline import deadline_client
from observations.extract.base import (
    AGENT_EXPERIENCE,
    EPISODIC,
    SESSION_SUMMARY,
    Extracted,
    Extraction,
    Extractor,
    SessionInput,
)
from observations.extract.llm_facts import map_facts
from observations.extract.llm_prompt import (
    NumberedTurn,
    build_messages,
    chunk_turns,
    number_turns,
    participants,
)
from observations.extract.llm_schema import LLMReplyError, parse_reply, response_format

__all__ = ["LLMConfig", "LLMConfigError", "LLMExtractor", "LLMReplyError"]

log = structlog.get_logger(__name__)

PROMPT_VERSION = "3"  # 2: a long turn is sent in parts, not cut; 3: beliefs it may end
CHARS_PER_TOKEN = 3  # conservative: English chat text averages about 4
_RETRYABLE_STATUS = frozenset({408, 409, 429})


class LLMConfigError(MemledgerError):
    """The LLM extractor's configuration is invalid: fix the named setting."""


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """How to reach the endpoint and how much to send and ask for."""

    base_url: str  # e.g. "https://api.openai.com/v1", "http://127.0.0.1:8080/v1"
    model: str
    api_key: str = "unused"  # local servers ignore it; the openai client needs one
    timeout: float = 60.0  # seconds per request
    max_retries: int = 2  # retries after the first attempt, transient errors only
    backoff_initial: float = 0.5  # seconds before the first retry, doubled each time
    backoff_max: float = 8.0
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    max_chunk_chars: int = 6000  # transcript characters per request
    max_chunk_tokens: int | None = None  # optional token cap, estimated from characters
    max_output_tokens: int = 1024
    max_facts_per_chunk: int = 12  # enforced by the grammar in the json_object form
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if not self.base_url or not self.model:
            raise LLMConfigError("base_url and model are required", model=self.model)
        if self.response_format not in ("json_schema", "json_object"):
            raise LLMConfigError(setting="response_format", value=self.response_format)
        positive = ["timeout", "max_chunk_chars", "max_output_tokens", "max_facts_per_chunk"]
        if self.max_chunk_tokens is not None:
            positive.append("max_chunk_tokens")
        for name in positive:  # "not > 0" also refuses NaN
            value = getattr(self, name)
            if not value > 0 or not math.isfinite(value):
                raise LLMConfigError("must be a positive number", setting=name, value=value)
        for name in ("max_retries", "backoff_initial", "backoff_max", "temperature"):
            value = getattr(self, name)
            if not value >= 0 or not math.isfinite(value):
                raise LLMConfigError("must be a number, not negative", setting=name, value=value)

    @property
    def chunk_chars(self) -> int:
        """The effective transcript cap per request."""
        if self.max_chunk_tokens is None:
            return self.max_chunk_chars
        return max(1, min(self.max_chunk_chars, self.max_chunk_tokens * CHARS_PER_TOKEN))


def _failure(exc: openai.APIError, base_url: str) -> tuple[LLMReplyError, bool]:
    """The reply error for a client exception, and whether a retry may help."""
    said = " ".join(str(exc).split())[:120]
    if isinstance(exc, openai.APITimeoutError):
        return LLMReplyError("llm_timeout", f"{said} ({base_url})"), True
    if isinstance(exc, openai.APIConnectionError):
        return LLMReplyError("llm_unreachable", f"{said} ({base_url})"), True
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry = status >= 500 or status in _RETRYABLE_STATUS
        return LLMReplyError("llm_http_error", f"HTTP {status}: {exc.message[:120]}"), retry
    return LLMReplyError("llm_error", f"{type(exc).__name__}: {said}"), False


def _retry_after(exc: openai.APIError) -> float | None:
    """The seconds a rate-limited or busy server asked to wait (``Retry-After`` in seconds;
    its HTTP-date form is not read)."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    try:
        seconds = float(exc.response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def _message(response: Any) -> tuple[str | None, str | None]:
    """The reply text and finish reason of a chat completion, whatever shape the server
    gave it: anything but a text (or a list of text parts) is an invalid reply."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise LLMReplyError("llm_invalid_json", "the response has no list of choices")
    choice = choices[0]
    content = getattr(getattr(choice, "message", None), "content", None)
    if isinstance(content, list):  # content parts
        texts = [getattr(p, "text", None) or (p.get("text") if isinstance(p, dict) else None)
                 for p in content]  # fmt: skip
        content = "".join(t for t in texts if isinstance(t, str))
    if content is not None and not isinstance(content, str):
        raise LLMReplyError("llm_invalid_json", f"the content is a {type(content).__name__}")
    reason = getattr(choice, "finish_reason", None)
    return content, reason if isinstance(reason, str) else None


def combine(facts: Sequence[Extracted], base: Extraction) -> tuple[Extracted, ...]:
    """LLM facts, then the fallback's experiences, uncited episodic items and summary."""
    cited = {event_id for item in facts for event_id in item.source_event_ids}
    borrowed = []
    for item in base.items:
        keep = item.kind in (AGENT_EXPERIENCE, SESSION_SUMMARY) or (
            item.kind == EPISODIC and not cited.intersection(item.source_event_ids)
        )
        if keep:
            borrowed.append(replace(item, fields={"extractor": base.extractor, **item.fields}))
    return (*facts, *borrowed)


class LLMExtractor:
    """Implements the ``Extractor`` protocol over an OpenAI-compatible endpoint."""

    name = "llm"
    reads_beliefs = True

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        fallback: Extractor,
        sleep: Callable[[float], None] = time.sleep,
        **settings: Any,
    ) -> None:
        """Either a ready ``config`` or its fields as keywords (``base_url=…, model=…``)."""
        if config is None:
            config = LLMConfig(**settings)
        elif settings:
            raise LLMConfigError("pass either config or its fields", fields=sorted(settings))
        self.config = config
        self.fallback = fallback
        self.version = f"{PROMPT_VERSION}+{config.model}"
        self._sleep = sleep
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=config.timeout,
            max_retries=0,  # retries are ours: counted, backed off, injectable sleep
            http_client=deadline_client(config.timeout),
        )

    def close(self) -> None:
        """Release the HTTP connections of the client."""
        self._client.close()

    def extract(self, session: SessionInput) -> Extraction:
        base = self.fallback.extract(session)
        turns = number_turns(session)
        if not any(t.event.role == "user" for t in turns):
            return replace(base, fallback_reason="llm_skipped: no user turns")
        try:
            facts = self._facts(session, turns)
        except LLMReplyError as exc:
            log.warning(
                "llm_extraction_fell_back", session_id=session.session_id, reason=exc.reason
            )
            return replace(base, fallback_reason=exc.reason)
        return Extraction(combine(facts, base), extractor=self.name, version=self.version)

    def _facts(self, session: SessionInput, turns: Sequence[NumberedTurn]) -> list[Extracted]:
        chunks = chunk_turns(turns, self.config.chunk_chars)
        people = participants(turns)
        facts: list[Extracted] = []
        dropped: Counter[str] = Counter()
        first_error = None
        for part, chunk in enumerate(chunks, start=1):
            messages = build_messages(session, chunk, people, (part, len(chunks)))
            reply = parse_reply(*self._complete(messages))
            mapped = map_facts(reply.facts, chunk, self.config.model, session.known_beliefs)
            facts.extend(mapped.items)
            dropped.update(mapped.dropped)
            dropped["invalid_item"] += reply.invalid
            first_error = first_error or reply.first_error
        self._log_result(session, len(chunks), facts, dropped)
        if not facts:
            raise _empty(dropped, first_error)
        return facts

    def _log_result(
        self, session: SessionInput, chunks: int, facts: list[Extracted], dropped: Counter[str]
    ) -> None:
        log.info(
            "llm_facts_extracted",
            session_id=session.session_id,
            model=self.config.model,
            chunks=chunks,
            facts=len(facts),
            dropped={reason: n for reason, n in dropped.items() if n},
        )

    def _complete(self, messages: list[dict[str, str]]) -> tuple[str | None, str | None]:
        """One chat completion, retried with exponential backoff on transient errors."""
        attempt = 0
        while True:
            try:
                return _message(self._client.chat.completions.create(**self._request(messages)))
            except ValueError as exc:  # a body the client could not decode (not JSON)
                raise LLMReplyError("llm_invalid_json", f"the response body: {exc}") from exc
            except openai.APIError as exc:
                error, retryable = _failure(exc, self.config.base_url)
                if not retryable or attempt >= self.config.max_retries:
                    detail = f"{error.detail} [{attempt + 1} attempts]"
                    raise LLMReplyError(error.code, detail) from exc
                wait = self.backoff(attempt, _retry_after(exc))
            self._sleep(wait)
            attempt += 1

    def backoff(self, attempt: int, asked: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based): doubling from
        ``backoff_initial``, or longer when the server ``asked`` for it (Retry-After), and
        never more than ``backoff_max``."""
        wait = max(self.config.backoff_initial * 2**attempt, asked or 0.0)
        return min(self.config.backoff_max, wait)

    def _request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        config = self.config
        return {
            "model": config.model,
            "messages": cast(Any, messages),
            "max_tokens": config.max_output_tokens,
            "temperature": config.temperature,
            "response_format": response_format(config.response_format, config.max_facts_per_chunk),
        }


def _empty(dropped: Mapping[str, int], first_error: str | None) -> LLMReplyError:
    counts = ", ".join(f"{reason}={n}" for reason, n in sorted(dropped.items()) if n)
    if dropped.get("invalid_item"):
        return LLMReplyError("llm_schema_violation", f"no valid fact ({counts}; {first_error})")
    if counts:
        return LLMReplyError("llm_empty", f"no usable fact ({counts})")
    return LLMReplyError("llm_empty", "the model returned no facts")
