"""The extractive session summary: the most informative sentences, each with its source.

Sentences of user and assistant turns are scored by how much of the session's recurring
vocabulary they carry (plus a bonus for names and dates, a penalty for questions); the
best few are kept in session order, rendered self-contained and prefixed with their
speaker. ``fields["sentence_sources"]`` lists ``[sentence, [event ids]]`` for every
sentence the summary quotes (summary, decisions, open questions), and the item's
provenance is exactly the union of those events.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from observations.extract.base import SESSION_SUMMARY, Extracted, KnownName, SessionInput
from observations.extract.dates import day_label
from observations.extract.text import ensure_period, singular
from observations.extract.turns import Sentence, Turn, participants

MAX_SENTENCES = 6
MAX_LISTED = 5
_DECISION = re.compile(
    r"\b(?:let['’]s|let\s+us|decided\s+to|agreed\s+to|going\s+with|settled\s+on|(?:I|we)"
    r"(?:['’]ll|\s+will|\s+decided|['’]ve\s+decided|\s+have\s+decided|\s+agreed"
    r"|\s+are\s+going\s+to|['’]re\s+going\s+to|['’]m\s+going\s+to|\s+am\s+going\s+to))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Quote:
    position: int
    turn: Turn
    sentence: Sentence

    @property
    def text(self) -> str:
        return f"{self.turn.speaker}: {ensure_period(self.sentence.rendered)}"


def _quotes(turns: tuple[Turn, ...]) -> list[_Quote]:
    found: list[_Quote] = []
    for turn in turns:
        for sentence in turn.sentences:
            if sentence.words:
                found.append(_Quote(len(found), turn, sentence))
    return found


def _score(quote: _Quote, frequency: Counter[str]) -> float:
    vocabulary = {singular(w) for w in quote.sentence.words}
    score = sum(math.log2(1 + frequency[w]) for w in vocabulary)
    score /= max(1.0, len(vocabulary)) ** 0.3
    score += 1.5 if quote.sentence.names else 0.0
    score += 1.0 if quote.sentence.dates else 0.0
    return score * (0.4 if quote.sentence.question else 1.0)


def _best(quotes: list[_Quote], frequency: Counter[str]) -> list[_Quote]:
    count = max(1, min(MAX_SENTENCES, math.ceil(len(quotes) / 5)))
    ranked = sorted(quotes, key=lambda q: (-_score(q, frequency), q.position))
    return sorted(ranked[:count], key=lambda q: q.position)


def _answered(quote: _Quote, turns: tuple[Turn, ...]) -> bool:
    later = [t for t in turns if t.event.seq > quote.turn.event.seq]
    return any(
        t.event.actor_id != quote.turn.event.actor_id
        and any(not s.question and s.words for s in t.sentences)
        for t in later
    )


def _decisions(quotes: list[_Quote]) -> list[_Quote]:
    chosen = [q for q in quotes if not q.sentence.question and _DECISION.search(q.sentence.text)]
    return chosen[:MAX_LISTED]


def _open_questions(quotes: list[_Quote], turns: tuple[Turn, ...]) -> list[_Quote]:
    asked = [q for q in quotes if q.sentence.question and q.sentence.words]
    return [q for q in asked if not _answered(q, turns)][:MAX_LISTED]


def _header(session: SessionInput, people: list[str]) -> str:
    first, last = day_label(session.started_at.date()), day_label(session.ended_at.date())
    when = f"On {first}" if first == last else f"From {first} to {last}"
    who = (
        " and ".join(people) if len(people) <= 2 else ", ".join(people[:-1]) + f" and {people[-1]}"
    )
    return f"{when}, {who} talked."


def _topics(frequency: Counter[str], people: list[str]) -> list[str]:
    """The most frequent words that are not a participant's name or nickname."""
    lowered = [p.lower() for p in people]
    ranked = [
        (w, n)
        for w, n in frequency.most_common()
        if not any(p.startswith(w) for p in lowered if len(w) >= 3) and w not in lowered
    ]
    return [w for w, n in ranked[:5] if n > 1] or [w for w, _ in ranked[:3]]


def _fields(
    quotes: list[_Quote],
    parts: dict[str, list[_Quote]],
    people: list[str],
    frequency: Counter[str],
    participant_ids: list[str],
) -> dict[str, Any]:
    entities: list[str] = []
    for q in quotes:
        entities.extend(n for n in q.sentence.names if n not in entities and n not in people)
    quoted = {q.position: q for group in parts.values() for q in group}
    return {
        "topics": _topics(frequency, people),
        "decisions": [q.text for q in parts["decisions"]],
        "open_questions": [q.text for q in parts["open_questions"]],
        "entities": entities[:15],
        "participants": people,
        "participant_ids": participant_ids,
        "sentence_sources": [[q.text, [q.turn.event.id]] for _, q in sorted(quoted.items())],
    }


def summarize(
    session: SessionInput, turns: tuple[Turn, ...], names: Sequence[KnownName] = ()
) -> Extracted | None:
    """One summary item for the session, or None when nobody said anything; ``names``, the
    relations named by their given name so far, kept for the channel's later sessions."""
    quotes = _quotes(turns)
    if not quotes:
        return None
    frequency = Counter(singular(w) for q in quotes for w in q.sentence.words)
    best = _best(quotes, frequency)
    parts = {
        "summary": best,
        "decisions": _decisions(quotes),
        "open_questions": _open_questions(quotes, turns),
    }
    people = participants(turns)
    ids = list(dict.fromkeys(t.event.actor_id for t in turns))
    fields = _fields(quotes, parts, people, frequency, ids)
    # the days the session tied words to, for its channel's later sessions to count from
    fields["days"] = {word: day.isoformat() for word, day in turns[-1].anchors.own.items()}
    fields["names"] = [[n.given, n.owner_id, n.role] for n in names]
    sources = sorted({event_id for _, ids in fields["sentence_sources"] for event_id in ids})
    return Extracted(
        kind=SESSION_SUMMARY,
        key=f"summary:{session.session_id}",
        owner_type="channel",
        owner_id=session.channel_id,
        statement=" ".join([_header(session, people), *(q.text for q in best)]),
        confidence=0.7,
        importance=0.5,
        source_event_ids=tuple(sources),
        valid_from=session.started_at,
        fields=fields,
    )
