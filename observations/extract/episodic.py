"""Episodic restatements: what a user turn said, by whom, to whom, with its date.

Most of a conversation is no fact of the eight kinds ("The support group has made me feel
accepted"), yet it is what later questions ask about, and a turn's facts read without
the rest of it lose their context. Each user turn whose sentences (and shared image) carry
at least ``min_content_words`` content words, and every turn sharing a captioned photo,
becomes one item keyed ``episodic:<event id>``: the record of what was said.

A record quotes: the speaker's own words, never rewritten into the third person, with who
said them, to whom and when as its header, and each date phrase followed by the period it
means: "Caroline to Melanie, 8 May 2023: I went to the support group yesterday [7 May
2023]." The header names the people, so the record (and its embedding) stands on its own
while every "I" and "you" stays the speaker's.

A reply means little without what it answers ("A sunset, last year."), so when the turn
follows another speaker's turn, that turn is quoted first and is part of the provenance:
"Melanie to Caroline, 8 May 2023: What did you paint? Caroline replied: A sunset, last year
[2022]."
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from observations.extract.base import EPISODIC, Extracted
from observations.extract.dates import day_label
from observations.extract.text import content_words, ensure_period, singular
from observations.extract.turns import Sentence, Turn

MIN_CONTENT_WORDS = 4


def _introduction(sentence: Sentence) -> bool:
    """Whether the sentence only gives the speaker's own name ("I'm Maya": once the first
    person is the speaker's name, "Maya Chen is Maya." says nothing)."""
    own = sentence.speaker.casefold().split()
    said = sentence.rendered.casefold().rstrip(".!").split()
    n = len(own)
    return (
        said[:n] == own
        and said[n : n + 1] == ["is"]
        and 0 < len(said[n + 1 :]) <= n
        and (set(said[n + 1 :]) <= set(own))
    )


def _substantive(turn: Turn) -> list[Sentence]:
    return [s for s in turn.sentences if s.words and not _introduction(s)]


def _said(turn: Turn, sentences: Sequence[Sentence], *, verbatim: bool = True) -> str:
    """The sentences as said (each date's period beside it), or rendered with names and
    absolute dates; a shared photo's caption after them."""
    parts = [ensure_period(s.recorded if verbatim else s.rendered) for s in sentences]
    if turn.caption:
        parts.append(f"{turn.speaker} shared a photo: {ensure_period(turn.caption)}")
    return " ".join(parts)


def _answered(prompt: Turn) -> list[Sentence]:
    """What of the prompt a reply answers: its questions, else its last sentence."""
    questions = [s for s in prompt.sentences if s.question]
    return questions or list(prompt.sentences[-1:])


def _statement(turn: Turn, sentences: list[Sentence], prompt: Turn | None) -> str:
    when = day_label(turn.event.occurred_at.date())
    if prompt is not None:
        return (
            f"{prompt.speaker} to {turn.speaker}, {when}: {_said(prompt, _answered(prompt))} "
            f"{turn.speaker} replied: {_said(turn, sentences)}"
        )
    to = f" to {turn.addressee}" if turn.addressee else ""
    return f"{turn.speaker}{to}, {when}: {_said(turn, sentences)}"


def _read_as(turn: Turn, sentences: list[Sentence], prompt: Turn | None) -> str:
    """The record as it reads with names for pronouns and absolute dates: what it is
    embedded as (``fields.read_as``), never what it shows."""
    when = day_label(turn.event.occurred_at.date())
    said = _said(turn, sentences, verbatim=False)
    if prompt is not None:
        answered = _answered(prompt)
        asked = "asked" if any(s.question for s in answered) else "said to"
        before = _said(prompt, answered, verbatim=False)
        heard = f"On {when}, {prompt.speaker} {asked} {turn.speaker}: {before}"
        return f"{heard} {turn.speaker} replied: {said}"
    to = f"said to {turn.addressee}" if turn.addressee else "said"
    return f"On {when}, {turn.speaker} {to}: {said}"


def _fields(turn: Turn, sentences: list[Sentence], prompt: Turn | None) -> dict[str, Any]:
    counts = Counter(singular(w) for s in sentences for w in s.words)
    fields: dict[str, Any] = {
        "read_as": _read_as(turn, sentences, prompt),
        "speaker": turn.speaker,
        "date": turn.event.occurred_at.date().isoformat(),
        "topics": [w for w, _ in counts.most_common(5)],
    }
    if turn.addressee:
        fields["addressee"] = turn.addressee
    entities = list(dict.fromkeys(n for s in sentences for n in s.names))
    if entities:
        fields["entities"] = entities
    dates = [d for s in sentences for d in s.dates]
    if dates:
        fields["event_time"] = dates[0].iso
        fields["event_time_granularity"] = dates[0].granularity
    if turn.caption:
        fields["image_caption"] = turn.caption
    return fields


def episodic_item(
    turn: Turn,
    min_content_words: int = MIN_CONTENT_WORDS,
    prompt: Turn | None = None,
) -> Extracted | None:
    """The turn as one self-contained item, if it says enough; ``prompt`` is the other
    speaker's turn it answers, restated before it."""
    sentences = _substantive(turn)
    caption_words = len(content_words(turn.caption)) if turn.caption else 0
    weight = sum(len(s.words) for s in sentences) + caption_words
    if weight < min_content_words and caption_words < 2:
        return None
    return Extracted(
        kind=EPISODIC,
        key=f"episodic:{turn.event.id}",
        owner_type="user",
        owner_id=turn.event.actor_id,
        statement=_statement(turn, sentences, prompt),
        confidence=0.7,
        importance=min(0.6, 0.25 + 0.02 * weight),
        source_event_ids=tuple(sorted({turn.event.id, *([prompt.event.id] if prompt else [])})),
        valid_from=turn.event.occurred_at,
        fields=_fields(turn, sentences, prompt),
    )


def _prompt(previous: Turn | None, turn: Turn) -> Turn | None:
    """The turn just before, when another speaker said something there."""
    if previous is None or previous.event.actor_id == turn.event.actor_id:
        return None
    return previous if previous.sentences or previous.caption else None


def extract_episodic(
    turns: tuple[Turn, ...], min_content_words: int = MIN_CONTENT_WORDS
) -> list[Extracted]:
    """One episodic item per substantive user turn, in session order."""
    items = []
    for i, turn in enumerate(turns):
        if turn.event.role != "user":
            continue
        prompt = _prompt(turns[i - 1] if i else None, turn)
        item = episodic_item(turn, min_content_words, prompt)
        if item is not None:
            items.append(item)
    return items
