"""A session's conversational turns, split into sentences and rendered self-contained."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from observations.extract.analysis import known_word
from observations.extract.base import SessionEvent, SessionInput
from observations.extract.dates import (
    Anchors,
    ResolvedDate,
    annotate_dates,
    apply_dates,
    find_dates,
)
from observations.extract.people import Cast, Person, addressees, tells
from observations.extract.rewrite import rewrite_persons
from observations.extract.text import (
    PERSONAL_START,
    caption_of,
    content_words,
    gives_secret,
    is_question,
    names,
    right_first,
    sentence_start,
    split_sentences,
    strip_filler,
    tidy,
    untag_first,
)

CONVERSATIONAL_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a turn: as written, as recorded (in the speaker's own words, each
    date with its absolute period beside it), and rendered with names and absolute dates."""

    index: int
    text: str  # leading filler stripped
    dates: tuple[ResolvedDate, ...]
    words: tuple[str, ...]  # content words, lower-case
    names: tuple[str, ...]  # capitalised names other than the speaker's
    speaker: str
    addressee: str | None

    @property
    def question(self) -> bool:
        return is_question(self.text)

    @property
    def recorded(self) -> str:
        """In the speaker's own words, each date phrase followed by the period it means
        ("yesterday [7 May 2023]"): what a record of the conversation quotes."""
        return annotate_dates(self.text, self.dates)

    @cached_property
    def rendered(self) -> str:
        """Self-contained: names instead of pronouns, absolute dates (made when first used:
        most sentences of a session are never stated on their own)."""
        return rewrite_persons(apply_dates(self.text, self.dates), self.speaker, self.addressee)


@dataclass(frozen=True)
class Turn:
    """A user or assistant event with its speaker, addressee and sentences."""

    event: SessionEvent
    to: Person | None  # whom its "you" means (see :mod:`.people`)
    text: str  # the content without an inline image caption
    caption: str | None
    # the days tied to words so far, this turn's added as its sentences are read
    anchors: Anchors = field(default_factory=Anchors, compare=False)

    @property
    def speaker(self) -> str:
        return self.event.speaker

    @property
    def addressee(self) -> str | None:
        return self.to.name if self.to is not None else None

    @cached_property
    def sentences(self) -> tuple[Sentence, ...]:
        found: list[Sentence] = []
        stated = None  # the last date said so far in the turn ("… the day before")
        pieces = [p for s in split_sentences(right_first(self.text)) for p in untag_first(s)]
        for raw in pieces:
            text = tidy(strip_vocative(strip_filler(raw), self.to))
            if not text or gives_secret(text):  # a secret is neither a fact nor a record
                continue
            index = len(found)  # its place among what the turn says ("lol" says nothing)
            dates = find_dates(text, self.event.occurred_at, stated=stated, anchors=self.anchors)
            self.anchors.tie_dates(text, dates)
            stated = dates[-1] if dates else stated
            found.append(
                Sentence(
                    index,
                    text,
                    dates,
                    tuple(content_words(text)),
                    tuple(names(text, exclude=(self.speaker,))),
                    self.speaker,
                    self.addressee,
                )
            )
        return tuple(found)


def strip_vocative(sentence: str, to: Person | None) -> str:
    """Drop a leading or trailing form of address ("Mel, …", "…, Caroline!"); before a
    request to the assistant without the comma too ("kit put champagne on the list", "kit
    my landlord still hasn't…": the assistant is told, never the one who did it)."""
    if to is None or not sentence:
        return sentence
    leading, trailing = _vocatives(to.name)
    sentence = trailing.sub("", leading.sub("", sentence)).strip()
    told = _NAME_FIRST.match(sentence)
    if told and told["name"].lower() in _called(to) and tells(to, sentence[told.end() :]):
        sentence = sentence[told.end() :]
    return sentence_start(sentence)


_NAME_FIRST = re.compile(r"(?P<name>[\w'’-]+)\s+")


def _called(person: Person) -> tuple[str, str]:
    return person.name.lower(), person.first_name.lower()


@lru_cache(maxsize=256)
def _vocatives(addressee: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Patterns for the addressee's name or nickname ("Mel" for Melanie) as a vocative."""
    first = re.escape(addressee.split()[0][:3])
    name = rf"(?:{first}[a-z]*|{re.escape(addressee)})"
    return (
        # "Mel, …", or in lower-case chat without the comma: "chloe i'm …", "mel you …"
        re.compile(rf"^{name}(?:\s*[,!.:]+\s*|\s+(?={PERSONAL_START}))", re.IGNORECASE),
        re.compile(rf",\s*{name}\s*(?=[.!?]*$)", re.IGNORECASE),
    )


def build_turns(session: SessionInput) -> tuple[Turn, ...]:
    """The session's user and assistant events as turns, in session order."""
    ordered = sorted(session.events, key=lambda e: (e.seq, e.id))
    events = [e for e in ordered if e.role in CONVERSATIONAL_ROLES]
    captioned = [caption_of(e.content, e.metadata) for e in events]
    cast = Cast(events)
    to = addressees(cast, events, [text for text, _ in captioned])
    names = _typed_names(cast)
    anchors = Anchors()
    for known in session.known_days:
        anchors.know(known.word, known.day)
    turns: list[Turn] = []
    for n, (event, (text, caption)) in enumerate(zip(events, captioned, strict=True)):
        typed = names.sub(_capitalised, text) if names else text
        turn = Turn(event, to[n], typed, caption, anchors.copy())
        _ = turn.sentences  # read in order: they tie their days into the turn's anchors
        anchors = turn.anchors  # which the next turn starts from
        turns.append(turn)
    return tuple(turns)


def _typed_names(cast: Cast) -> re.Pattern[str] | None:
    """The participants' names as they may be typed in lower case ("congrats to tom who…":
    the tagger reads "to tom" as a verb), to be written as names; not a name that is also
    an English verb or adjective ("will", "grace", "rose"), nor one under three letters."""
    found = {
        part
        for person in cast.people.values()
        for part in person.name.split()
        if len(part) > 2 and part.isalpha() and not part.islower()
        and not known_word(part.lower())
    }  # fmt: skip
    if not found:
        return None
    alternatives = "|".join(sorted(re.escape(n.lower()) for n in found))
    return re.compile(rf"(?<![\w@#'’-])(?:{alternatives})(?![\w-])(?!['’](?!s\b))")


def _capitalised(m: re.Match[str]) -> str:
    return m[0][:1].upper() + m[0][1:]


def participants(turns: tuple[Turn, ...]) -> list[str]:
    seen: list[str] = []
    for turn in turns:
        if turn.speaker not in seen:
            seen.append(turn.speaker)
    return seen
