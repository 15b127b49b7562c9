"""What the LLM must reply: the JSON schema sent with the request and its pydantic twin.

The schema sent to the server is strict (every property required, nullable ones typed
``["string", "null"]``, no extra properties), as OpenAI's ``json_schema`` form demands;
llama.cpp turns the same schema into a grammar. The pydantic models that validate the
reply are a little more lenient (missing optional fields default, confidences are
clamped into [0, 1], a turn cited as ``"T3"`` reads as 3 and a belief as ``"B2"`` as 2),
because a reply is only
useful if it survives validation and these slips do not change its meaning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ledger.errors import MemledgerError
from observations.extract.base import FACT_KINDS

SCHEMA_NAME = "memledger_facts"
_TURN = re.compile(r"^\s*(?:turn\s*|t)?#?\s*(\d+)\s*$", re.IGNORECASE)
_BELIEF = re.compile(r"^\s*b?#?\s*(\d+)\s*$", re.IGNORECASE)

# Bounds that keep a grammar-constrained small model from looping inside one string or
# list until it runs out of tokens; sent in the ``json_object`` (llama.cpp) form only.
_BOUNDS: dict[str, dict[str, int]] = {
    "key": {"maxLength": 40},
    "statement": {"maxLength": 200},
    "speaker": {"maxLength": 40},
    "source_turns": {"maxItems": 4},
    "persons": {"maxItems": 3},
    "event_time": {"maxLength": 10},
    "location": {"maxLength": 40},
    "topic": {"maxLength": 30},
    "ends": {"maxItems": 3},
}


class LLMFact(BaseModel):
    """One user fact as the model states it."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    kind: str
    key: str = ""
    statement: str = Field(min_length=1)
    speaker: str = ""
    confidence: float = 0.7
    importance: float = 0.5
    source_turns: list[int] = Field(default_factory=list)
    event_time: str | None = None
    persons: list[str] = Field(default_factory=list)
    location: str | None = None
    topic: str | None = None
    ends: list[int] = Field(default_factory=list)  # numbers of the beliefs it replaces

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        kind = value.lower()
        if kind not in FACT_KINDS:
            raise ValueError(f"kind must be one of {', '.join(FACT_KINDS)}")
        return kind

    @field_validator("confidence", "importance")
    @classmethod
    def _clamp(cls, value: float) -> float:
        return min(1.0, max(0.0, value))

    @field_validator("source_turns", "ends", mode="before")
    @classmethod
    def _numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """Turns cited as "T3", beliefs named as "B2": their numbers."""
        if not isinstance(value, list):
            return [] if value is None else value
        form = _TURN if info.field_name == "source_turns" else _BELIEF
        return [_number(v, form) for v in value]

    @field_validator("persons", mode="before")
    @classmethod
    def _no_persons(cls, value: Any) -> Any:
        return [] if value is None else value


def _number(value: Any, form: re.Pattern[str]) -> Any:
    """``"T3"`` (a turn) or ``"B2"`` (a belief) as its number; anything else unchanged."""
    if isinstance(value, str) and (match := form.match(value)):
        return int(match.group(1))
    return value


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


def _bound(prop: dict[str, Any], limits: dict[str, int]) -> dict[str, Any]:
    if isinstance(prop["type"], list):  # nullable: llama.cpp bounds only the anyOf form
        return {"anyOf": [{"type": prop["type"][0], **limits}, {"type": "null"}]}
    return {**prop, **limits}


def fact_schema(bounded: bool) -> dict[str, Any]:
    """The JSON schema of one fact; ``bounded`` adds length limits for small models."""
    properties: dict[str, Any] = {
        "kind": {"type": "string", "enum": list(FACT_KINDS)},
        "key": {"type": "string"},
        "statement": {"type": "string"},
        "speaker": {"type": "string"},
        "confidence": {"type": "number"},
        "importance": {"type": "number"},
        "source_turns": {"type": "array", "items": {"type": "integer"}},
        "event_time": _nullable("string"),
        "persons": {"type": "array", "items": {"type": "string"}},
        "location": _nullable("string"),
        "topic": _nullable("string"),
        "ends": {"type": "array", "items": {"type": "integer"}},
    }
    if bounded:
        for name, limits in _BOUNDS.items():
            properties[name] = _bound(properties[name], limits)
        properties["source_turns"]["minItems"] = 1
        properties["persons"]["items"] = {"type": "string", "maxLength": 40}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def reply_schema(bounded: bool = False, max_facts: int = 12) -> dict[str, Any]:
    """The JSON schema of a whole reply: ``{"facts": [fact, ...]}``."""
    facts: dict[str, Any] = {"type": "array", "items": fact_schema(bounded)}
    if bounded:
        facts["maxItems"] = max_facts
    return {
        "type": "object",
        "properties": {"facts": facts},
        "required": ["facts"],
        "additionalProperties": False,
    }


def response_format(form: Literal["json_schema", "json_object"], max_facts: int) -> dict[str, Any]:
    """The ``response_format`` request field in the server's dialect.

    ``json_schema`` is the OpenAI / vLLM form; ``json_object`` with a ``schema`` is the
    llama.cpp server form (it rejects the OpenAI form with HTTP 500).
    """
    if form == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": SCHEMA_NAME, "schema": reply_schema(), "strict": True},
        }
    return {"type": "json_object", "schema": reply_schema(bounded=True, max_facts=max_facts)}


class LLMReplyError(MemledgerError):
    """The LLM endpoint failed or its reply was unusable; the fallback extractor is used."""

    def __init__(self, code: str, detail: str, **fields: Any) -> None:
        self.code = code
        self.detail = " ".join(detail.split())[:200]
        super().__init__(f"{code}: {self.detail}", **fields)

    @property
    def reason(self) -> str:
        """The short reason recorded as ``Extraction.fallback_reason``."""
        return f"{self.code}: {self.detail}"


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """The facts that validated, and how many did not."""

    facts: tuple[LLMFact, ...]
    invalid: int
    first_error: str | None = None


def _json_object(content: str | None, finish_reason: str | None) -> dict[str, Any]:
    if not content or not content.strip():
        raise LLMReplyError("llm_invalid_json", f"empty reply (finish_reason={finish_reason})")
    try:
        data = json.loads(content)
    except RecursionError as exc:
        raise LLMReplyError("llm_invalid_json", "the reply is nested too deeply") from exc
    except ValueError as exc:
        cut = " (the reply hit max_tokens)" if finish_reason == "length" else ""
        raise LLMReplyError("llm_invalid_json", f"{exc}{cut}: {content[:60]!r}") from exc
    if not isinstance(data, dict):
        raise LLMReplyError("llm_invalid_json", f"expected an object, got {type(data).__name__}")
    return data


def parse_reply(content: str | None, finish_reason: str | None = None) -> ParsedReply:
    """Validate a reply's text: a JSON object with a ``facts`` list of fact objects.

    A reply that is not JSON, or not shaped ``{"facts": [...]}``, raises
    ``LLMReplyError``; a single fact that fails validation is counted and skipped.
    """
    data = _json_object(content, finish_reason)
    raw = data.get("facts")
    if not isinstance(raw, list):
        raise LLMReplyError("llm_schema_violation", "the reply has no 'facts' list")
    facts, errors = [], []
    for item in raw:
        try:
            facts.append(LLMFact.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            errors.append(f"{'.'.join(map(str, first['loc']))}: {first['msg']}")
    return ParsedReply(tuple(facts), len(errors), errors[0] if errors else None)
