"""Who is who in a session: the participants, and the person each turn addresses.

A participant is found by actor id, display name or first name, case-blind ("tom" is Tom
Okafor when he is the only Tom of the session). A turn's addressee — whom its "you"
means — is, in order: the participant it @-mentions, the one it addresses by name at its
start or end ("tom, …", "…, maya!"), the one whose message it replies to
(``metadata["reply_to_actor_id"]``, for chat backends that know it), else the nearest
earlier other speaker (then a later one). The assistant can be the addressee; it is never
turned into a human member: a "you" that means the assistant makes no user fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from observations.extract.analysis import known_adjective, known_verb
from observations.extract.base import SessionEvent
from observations.extract.text import PERSONAL_START

HUMAN_ROLES = ("user",)
_MENTION = re.compile(r"(?<![\w@])@([\w.-]+)")
_LEADING = re.compile(r"^\W*(?:(?:hey|hi|hello|yo|ok|okay|oh|so|thanks|thank\s+you)\W+)?([\w'’-]+)")
_TRAILING = re.compile(r",\s*([\w'’-]+(?:\s+[\w'’-]+)?)\W*$")
# what follows a leading name that addresses someone: a mark or the end, or in lower-case
# chat without the comma a first or second person ("pip we're planning …")
_MARKED = re.compile(r"\s*(?:[,!:-]|$)")
_UNMARKED = re.compile(rf"\s+{PERSONAL_START}", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Person:
    """A participant: a user, or the assistant."""

    actor_id: str
    name: str  # the display name, as statements write it
    assistant: bool = False

    @property
    def first_name(self) -> str:
        return self.name.split()[0] if self.name.split() else self.name

    @property
    def possessive(self) -> str:
        return f"{self.name}'s"


class Cast:
    """The participants of one session, and lookups by name."""

    def __init__(self, events: Iterable[SessionEvent]) -> None:
        self.people: dict[str, Person] = {}
        for event in events:
            if event.role in ("user", "assistant") and event.actor_id not in self.people:
                assistant = event.role not in HUMAN_ROLES
                self.people[event.actor_id] = Person(event.actor_id, event.speaker, assistant)
        self._names = self._index()

    def _index(self) -> dict[str, Person | None]:
        """Lower-cased names → the one person they name (None when they name several)."""
        index: dict[str, Person | None] = {}
        for person in self.people.values():
            for name in {person.actor_id, person.name, person.first_name}:
                key = _fold(name)
                if key:
                    index[key] = person if index.get(key, person) is person else None
        return index

    @property
    def humans(self) -> list[Person]:
        return [p for p in self.people.values() if not p.assistant]

    def find(self, name: str) -> Person | None:
        """The participant ``name`` (a display name, first name or id) means, if one."""
        return self._names.get(_fold(name))

    def nickname(self, word: str) -> Person | None:
        """A participant by name, or by a short form of a first name ("Mel" for Melanie)."""
        found = self.find(word)
        if found is not None or len(word) < 3:
            return found
        matches = [p for p in self.people.values() if _fold(p.first_name).startswith(_fold(word))]
        return matches[0] if len(matches) == 1 else None


def _fold(name: str) -> str:
    return " ".join(name.casefold().replace("’", "'").split())


def addressed(cast: Cast, event: SessionEvent, text: str) -> Person | None:
    """The participant a message names as its addressee (mention, name, reply), if any."""
    for candidate in _named(cast, event, text):
        if candidate is not None and candidate.actor_id != event.actor_id:
            return candidate
    return None


def _named(cast: Cast, event: SessionEvent, text: str) -> Iterable[Person | None]:
    for mention in _MENTION.findall(text):
        yield cast.find(mention)
    leading = _LEADING.match(text)
    if leading and _MARKED.match(text, leading.end()):
        yield cast.nickname(leading.group(1))
    elif leading and _UNMARKED.match(text, leading.end()):
        yield cast.find(leading.group(1))  # no short form: "and we…" names no Andrew
    elif leading and (told := cast.find(leading.group(1))) and tells(told, text[leading.end() :]):
        yield told
    trailing = _TRAILING.search(text)
    if trailing:
        yield cast.nickname(trailing.group(1))
    reply = event.metadata.get("reply_to_actor_id")
    if isinstance(reply, str):
        yield cast.people.get(reply)


def tells(person: Person, rest: str) -> bool:
    """Whether ``rest``, said right after the assistant ``person``'s name without a comma,
    is what the assistant is told: a request ("put champagne on the list", "remind me…")
    or news of one's own ("my landlord still…"); the assistant is never its subject."""
    word = rest.split(maxsplit=1)[0].lower() if rest.strip() else ""
    return person.assistant and (
        word in _OWN_NEWS or (known_verb(word) and not known_adjective(word))
    )


_OWN_NEWS = frozenset(("my", "our", "pls", "please", "plz"))


def addressees(
    cast: Cast, events: Sequence[SessionEvent], texts: Sequence[str]
) -> list[Person | None]:
    """Each message's addressee: named, else the nearest earlier other speaker, else a later
    one (``events`` are the session's conversational events in order, ``texts`` theirs)."""
    found = []
    for position, event in enumerate(events):
        named = addressed(cast, event, texts[position])
        found.append(named or _neighbour(cast, events, position))
    return found


def _neighbour(cast: Cast, events: Sequence[SessionEvent], position: int) -> Person | None:
    me = events[position].actor_id
    for other in (*reversed(events[:position]), *events[position + 1 :]):
        if other.actor_id != me:
            return cast.people.get(other.actor_id)
    return None
