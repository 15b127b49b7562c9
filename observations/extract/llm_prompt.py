"""The LLM extractor's prompt: numbered, dated turns, cut into chunks under a size cap.

Each user/assistant event of the session becomes one numbered line,
``T3 [2023-05-08 13:56] Caroline: I went to a support group yesterday.``, so the model
sees who said what and when (relative dates resolve against the turn's own date, not the
wall clock), and cites turn numbers that map back to event ids. Numbers run over the
whole session, so every chunk of a long session cites the same numbers.

Before the transcript come the facts memory holds as current about the session's users,
numbered the same way (``B2 [identity:employer] Priya works at Fernway.``), so the model
can say which of them a new fact ends ("ever since I joined Ridgeway" ends B2).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from observations.extract.base import FACT_KINDS, SessionEvent, SessionInput

TURN_ROLES = ("user", "assistant")
_CAPTION_KEYS = ("image_caption", "blip_caption", "caption")
_SPACE = re.compile(r"\s+")

SYSTEM_PROMPT = f"""\
Extract long-term memory facts about the users from the chat transcript.
- Only facts a user stated. Never add knowledge nobody said.
- Statements are self-contained: names, never pronouns (I, you, she, they); absolute \
dates (resolve "yesterday" against the turn's date), never relative ones.
- kind: one of {", ".join(FACT_KINDS)} (event = a dated happening).
- key: "<kind>:<topic>", lower case, e.g. "preference:drink".
- speaker: the name of the user the fact is about.
- source_turns: the numbers of the turns the fact came from (T3 -> 3). A long turn \
comes in parts, each line under the turn's number.
- confidence, importance: 0 to 1. event_time: YYYY-MM-DD or YYYY-MM, else null.
- ends: the numbers of the beliefs listed before the transcript that the fact replaces: \
the same thing about the same user, now with another value or no longer true (B2 -> 2). \
[] when it replaces none; a fact that repeats or adds to a belief ends nothing.
Reply with JSON: {{"facts": [...]}}; {{"facts": []}} when no user states a fact."""


@dataclass(frozen=True, slots=True)
class NumberedTurn:
    """A user/assistant event, its turn number, and its line in the transcript."""

    number: int
    event: SessionEvent
    line: str


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _caption(event: SessionEvent) -> str | None:
    for key in _CAPTION_KEYS:
        value = event.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def turn_line(number: int, event: SessionEvent) -> str:
    return _head(number, event) + _text(event)


def _head(number: int, event: SessionEvent, part: int | None = None) -> str:
    when = stamp(event.occurred_at) + (f", part {part}" if part else "")
    return f"T{number} [{when}] {one_line(event.speaker)}: "


def _text(event: SessionEvent) -> str:
    text = _SPACE.sub(" ", event.content).strip()
    caption = _caption(event)
    if caption:
        text = f"{text} [shares a photo: {_SPACE.sub(' ', caption)}]".strip()
    return text


def one_line(text: str) -> str:
    """A name as the prompt shows it: on one line (a name holding newlines would forge
    transcript lines)."""
    return _SPACE.sub(" ", text).strip()


def number_turns(session: SessionInput) -> tuple[NumberedTurn, ...]:
    """The session's user and assistant events, numbered from 1 in session order."""
    ordered = sorted(session.events, key=lambda e: (e.seq, e.id))
    turns = [e for e in ordered if e.role in TURN_ROLES]
    return tuple(NumberedTurn(n, e, turn_line(n, e)) for n, e in enumerate(turns, start=1))


MIN_PIECE_CHARS = 40  # of a long turn's text per line; with less room, the line is cut


def _pieces(turn: NumberedTurn, max_chars: int) -> list[NumberedTurn]:
    """The turn as lines of at most ``max_chars``: its own line, or, when that is longer,
    its text in consecutive pieces (cut at a space where one is near), each on a line
    with the turn's number, marked "part k" beside its time. Should even a piece not fit
    beside its heading, the line is cut (it ends with "…")."""
    if len(turn.line) <= max_chars:
        return [turn]
    text = _text(turn.event)
    widest = _head(turn.number, turn.event, part=len(text))  # more digits than any part
    room = max_chars - len(widest)
    if room < MIN_PIECE_CHARS:
        return [replace(turn, line=turn.line[: max_chars - 1].rstrip() + "…")]
    pieces: list[NumberedTurn] = []
    while text:
        cut = len(text) if len(text) <= room else text.rfind(" ", room // 2, room + 1)
        cut = cut if cut > 0 else room
        head = _head(turn.number, turn.event, part=len(pieces) + 1)
        pieces.append(replace(turn, line=head + text[:cut].strip()))
        text = text[cut:].strip()
    return pieces


def chunk_turns(turns: Sequence[NumberedTurn], max_chars: int) -> list[list[NumberedTurn]]:
    """Consecutive turns packed into chunks whose lines total at most ``max_chars``.

    A turn longer than the cap is sent in pieces, one chunk after another, each under the
    turn's own number: a fact said at its end is seen like one said at its start.
    """
    chunks: list[list[NumberedTurn]] = []
    current: list[NumberedTurn] = []
    size = 0
    for turn in (piece for t in turns for piece in _pieces(t, max_chars)):
        if current and size + len(turn.line) + 1 > max_chars:
            chunks.append(current)
            current, size = [], 0
        current.append(turn)
        size += len(turn.line) + 1
    if current:
        chunks.append(current)
    return chunks


def participants(turns: Sequence[NumberedTurn]) -> list[str]:
    """ "Caroline (user)", "Trip Agent (assistant)": each speaker once, in order."""
    seen: dict[str, str] = {}
    for turn in turns:
        seen.setdefault(one_line(turn.event.speaker), turn.event.role)
    return [f"{name} ({role})" for name, role in seen.items()]


def belief_lines(session: SessionInput) -> list[str]:
    """The users' current facts, numbered from 1, each with its user's name: ``B1
    [preference:drink] Caroline: Caroline drinks tea.``"""
    names = {e.actor_id: one_line(e.speaker) for e in session.events}
    return [
        f"B{n} [{b.key}] {names.get(b.owner_id, b.owner_id)}: {one_line(b.statement)}"
        for n, b in enumerate(session.known_beliefs, start=1)
    ]


def user_message(
    session: SessionInput, chunk: Sequence[NumberedTurn], people: list[str], part: tuple[int, int]
) -> str:
    zone = session.started_at.tzname() or "UTC"
    header = [
        f"Participants: {', '.join(people)}",
        f"Session: {stamp(session.started_at)} to {stamp(session.ended_at)} ({zone})",
    ]
    beliefs = belief_lines(session)
    if beliefs:
        header += ["What memory holds about them now:", *beliefs]
    if part[1] > 1:
        header.append(f"Transcript part {part[0]} of {part[1]}:")
    else:
        header.append("Transcript:")
    return "\n".join([*header, *(t.line for t in chunk)])


def build_messages(
    session: SessionInput, chunk: Sequence[NumberedTurn], people: list[str], part: tuple[int, int]
) -> list[dict[str, str]]:
    """The chat messages for one chunk: the rules, then the dated, numbered transcript."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_message(session, chunk, people, part)},
    ]
