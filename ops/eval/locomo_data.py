"""The LoCoMo benchmark's file, read into conversations, sessions, questions and reference
facts, and turned into ledger events.

Each conversation becomes one tenant; its two speakers are users; every turn is a ``user``
event in one channel whose ``external_id`` is the turn's ``dia_id`` (so provenance can be
compared with the benchmark's evidence), dated at its session's date plus 30 s per turn.
A shared photo's caption goes to ``metadata.image_caption``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ledger.errors import InvalidInput

SCORED_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TURN_SPACING = timedelta(seconds=30)
_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


class InvalidDataset(InvalidInput):
    """The file is not a LoCoMo dataset this reader understands."""


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # dia_ids of turns that exist


@dataclass(frozen=True, slots=True)
class Reference:
    """One of the benchmark's observations: a fact about a speaker, from some turns."""

    text: str
    speaker: str  # the speaker's user id (:func:`speaker_id`)
    dia_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[tuple[Turn, ...], ...]
    questions: tuple[Question, ...]  # scored categories with evidence only
    reference_facts: tuple[Reference, ...]  # the observations, each with its speaker

    @property
    def turns(self) -> Iterator[Turn]:
        for session in self.sessions:
            yield from session

    @property
    def asked_at(self) -> datetime:
        """The day after its last session: when the eval ingests and builds it and asks its
        questions (a moment of the data, not of the machine: runs repeat exactly)."""
        return self.sessions[-1][-1].at + timedelta(days=1)


def load(path: Path, only: set[str] | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo file (``only`` their sample ids, when given)."""
    try:
        raw = json.loads(path.read_text("utf-8"))
        conversations = [_conversation(c) for c in raw if not only or c["sample_id"] in only]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidDataset(f"cannot read LoCoMo data: {exc}", path=str(path)) from exc
    if only and (missing := only - {c.sample_id for c in conversations}):
        raise InvalidDataset("no such conversations", path=str(path), missing=sorted(missing))
    return conversations


def parse_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" (no zone given: read as UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalize_dia_id(raw: str) -> list[str]:
    """Evidence ids as written ("D8:6; D9:17", "D30:05") → ["D8:6", "D9:17"], ["D30:5"]."""
    return [f"D{int(s)}:{int(t)}" for s, t in _DIA_ID.findall(raw)]


def events(conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation as ledger events, in order."""
    return [_event(conversation, turn) for turn in conversation.turns]


def session_events(path: Path, turns: int = 0) -> list[list[dict[str, Any]]]:
    """The sessions of a LoCoMo file as ledger events, each session in a channel of its own;
    with ``turns``, every run of that many turns of a session is a session (a shorter rest
    is left out)."""
    found: list[list[dict[str, Any]]] = []
    for conversation in load(path):
        for n, session in enumerate(conversation.sessions, 1):
            size = turns or len(session)
            if not size:
                continue  # a session whose turns all were empty
            for start in range(0, len(session) - size + 1, size):
                channel = f"{conversation.sample_id}-{n}-{start}"
                run = session[start : start + size]
                found.append([{**_event(conversation, t), "channel_id": channel} for t in run])
    return found


def _event(conversation: Conversation, turn: Turn) -> dict[str, Any]:
    return {
        "external_id": turn.dia_id,
        "channel_id": conversation.sample_id,
        "role": "user",
        "actor_id": speaker_id(turn.speaker),
        "actor_name": turn.speaker,
        "content": turn.text or f"[image: {turn.caption}]",
        "occurred_at": turn.at,
        "metadata": {"image_caption": turn.caption} if turn.caption else {},
    }


def speaker_id(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def turn_text(turn: Turn) -> str:
    """A turn as one text: "[8 May 2023] Caroline: … [image: a photo of …]"."""
    caption = f" [image: {turn.caption}]" if turn.caption else ""
    return f"[{turn.at:%-d %B %Y}] {turn.speaker}: {turn.text}{caption}"


def _conversation(raw: dict[str, Any]) -> Conversation:
    conv = raw["conversation"]
    numbers = sorted(int(m[1]) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
    sessions = tuple(
        _session(conv[f"session_{n}"], conv[f"session_{n}_date_time"]) for n in numbers
    )
    known = {t.dia_id for s in sessions for t in s}
    return Conversation(
        raw["sample_id"],
        (conv["speaker_a"], conv["speaker_b"]),
        sessions,
        tuple(q for q in map(lambda q: _question(q, known), raw["qa"]) if q is not None),
        tuple(_reference_facts(raw.get("observation", {}), known)),
    )


def _session(turns: list[dict[str, Any]], date: str) -> tuple[Turn, ...]:
    start = parse_date(date)
    return tuple(
        Turn(t["dia_id"], t["speaker"], t["text"], t.get("blip_caption"), start + i * TURN_SPACING)
        for i, t in enumerate(turns)
        if t.get("text", "").strip() or t.get("blip_caption")
    )


def _question(raw: dict[str, Any], known: set[str]) -> Question | None:
    if raw.get("category") not in SCORED_CATEGORIES:
        return None
    evidence = [d for e in raw.get("evidence", []) for d in normalize_dia_id(str(e))]
    kept = tuple(dict.fromkeys(d for d in evidence if d in known))
    if not kept:
        return None
    return Question(raw["question"], str(raw.get("answer", "")), raw["category"], kept)


def _reference_facts(observation: dict[str, Any], known: set[str]) -> Iterator[Reference]:
    for per_speaker in observation.values():
        for speaker, facts in per_speaker.items():
            for fact, source in facts:
                ids = source if isinstance(source, list) else [source]
                kept = tuple(d for s in ids for d in normalize_dia_id(str(s)) if d in known)
                if kept:
                    yield Reference(fact, speaker_id(speaker), kept)
