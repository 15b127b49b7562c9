"""Facts said in passing, in a phrase rather than a clause about the person.

Chat often says where someone lives or works in a phrase of a sentence about something
else, where no clause has the person as its subject:

* a home: "reunion is 16 aug at my place in gaia" → "Teresa Nunes lives in Gaia."
  (``identity:city``), also one just got or new ("got a studio in grenoble", "new place
  in neustadt is cute", "im in a flatshare in lyon"); "my place in line", "our house in
  the woods" say no town;
* a first stretch at a workplace: "first week at kaiser oakland done!!!" → "Dani Ortiz
  started at Kaiser Oakland." (``identity:employer``); not "first day at school";
* a shift at a workplace: "night shift at st thomas' hospital all weekend" → "Priya Das
  works at St Thomas' Hospital." (``identity:employer``); not "a shift at work";
* congratulations on a new job: "congrats @tariq on the new job at spotify!!!" → "Tariq
  Aziz got a new job at Spotify." (``identity:employer`` of the member congratulated,
  said by the speaker, so a friend's claim as any other).

* a car named by its make or model: "i'll drive, my corolla fits all of us" → "Beth Lee
  has a corolla.", "took the new outback up to tahoe" → "Kofi Mensah has an outback."
  (``identity:car``, so a new one supersedes the old); not "my car" alone, which names
  none, nor "his new tesla";
* a home country or town named beside it: "a gift from my grandma in my home country,
  Sweden" → "Caroline's home country is Sweden." (``identity:origin``); also "Austin, my
  hometown"; not "my home, Sweden" or "my country, …" without "home"/"native".

Each is one fact of its own beside the clauses' facts (:mod:`.user_facts`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from observations.extract.analysis import Parsed, Word
from observations.extract.people import Person
from observations.extract.references import Speech, mine
from observations.extract.vocabulary import (
    ABSTRACT,
    CAR_NAMES,
    JOBS,
    LET_GO,
    SETTINGS,
    TIME_NOUNS,
    words,
)

HOMELANDS = words("hometown homeland")
_HOMELAND_PARTS = words("country town city island")
HOMES = words("place house flat apartment apt home condo studio flatshare houseshare")
STARTS = words("day week month shift")
SHIFTS = words("shift")  # a stretch of work: one works where one does a shift
CONGRATS = words("congrats congratulations congratz grats")
# what follows "my place in" that is no town ("my place in line", "in the queue")
_NOT_TOWNS = ABSTRACT | TIME_NOUNS | words("line queue history order team society family")


@dataclass(frozen=True, slots=True)
class Passing:
    """A fact read off a phrase: whose it is, its key's kind and topic, and its words."""

    owner: Person
    kind: str
    topic: str
    value: str
    statement: str
    predicate: str
    confidence: float
    said_by: str | None = None  # the speaker, when the fact is another member's


def passing_facts(parsed: Parsed, speech: Speech) -> Iterator[Passing]:
    """The facts the phrases of one parsed sentence say in passing."""
    me = speech.speaker
    for word in parsed.words:
        if word.lemma in HOMES and (_mine(parsed, word) or _got_or_new(parsed, word)):
            # "got a studio in grenoble": the parse may hang the town on the getting
            got = parsed.words[word.head] if word.dep == "dobj" else word
            town = _named_place(parsed, word, "in", _NOT_TOWNS) or _named_place(
                parsed, got, "in", _NOT_TOWNS
            )
            if town is not None:
                yield Passing(me, "identity", "city", town, f"{me.name} lives in {town}.",
                              "live", 0.75)  # fmt: skip
        elif word.lemma in STARTS and _first(parsed, word) and _mine(parsed, word, bare=True):
            work = _named_place(parsed, word, "at", SETTINGS, proper=True)
            if work is not None:
                yield Passing(me, "identity", "employer", work, f"{me.name} started at {work}.",
                              "start", 0.75)  # fmt: skip
        elif word.lemma in SHIFTS and word.pos == "NOUN" and _mine(parsed, word, bare=True):
            work = _named_place(parsed, word, "at", SETTINGS, proper=True)
            if work is not None:
                yield Passing(me, "identity", "employer", work, f"{me.name} works at {work}.",
                              "work", 0.7)  # fmt: skip
        elif _homeland(parsed, word) and _mine(parsed, word):
            name = _apposed_name(parsed, word)
            if name is not None:
                called = " ".join(parsed.words[i].lower for i in range(word.left, word.i + 1)
                                  if parsed.words[i].dep != "poss")  # fmt: skip
                yield Passing(me, "identity", "origin", name, f"{me.name}'s {called} is {name}.",
                              "be", 0.75)  # fmt: skip
        elif _car_name(parsed, word) and _my_car(parsed, word):
            car = _car_words(parsed, word)
            a = "an" if car[:1].lower() in "aeiou" else "a"
            yield Passing(me, "identity", "car", car, f"{me.name} has {a} {car}.", "have", 0.7)
        elif word.lower in JOBS and _new(parsed, word) and _mine(parsed, word, bare=True):
            work = _named_place(parsed, word, "at", SETTINGS) or _named_place(
                parsed, word, "with", SETTINGS
            )
            if work is not None:
                yield Passing(me, "identity", "employer", work,
                              f"{me.name} has a new job at {work}.", "have", 0.75)  # fmt: skip
        elif word.lower in CONGRATS:
            found = _new_job(parsed, word, speech)
            if found is not None:
                yield found


def _got_or_new(parsed: Parsed, word: Word) -> bool:
    """A home the speaker has just got or lives in, said with "a" or "new": "got a studio
    in grenoble", "new place in neustadt is cute", "im in a flatshare in lyon"; not one
    seen, visited or found ahead of a move ("we saw a flat in porto", "found a flat in
    headingley!!" while moving in july), nor someone else's."""
    if parsed.kids(word.i, "poss"):
        return False
    if _new(parsed, word):
        return True
    head = parsed.words[word.head]
    verb = parsed.words[head.head] if word.dep == "pobj" and head.lower == "in" else head
    if verb.lemma not in ("get", "rent", "be", "buy"):
        return False
    while not parsed.kids(verb.i, "nsubj") and verb.dep == "conj":
        verb = parsed.words[verb.head]  # "left the flatshare, got a studio…": one subject
    return [s.lower for s in parsed.kids(verb.i, "nsubj")] in (["i"], ["we"])


def _mine(parsed: Parsed, word: Word, bare: bool = False) -> bool:
    """ "my place", "our flat" (or, with ``bare``, no owner at all: "first week at…")."""
    if not parsed.kids(word.i, "poss"):
        return bare and not parsed.kids(word.i, "det")
    return mine(parsed, word)


def _car_name(parsed: Parsed, word: Word) -> bool:
    """A noun that names a car by its make or model ("corolla", "honda civic")."""
    if word.pos not in ("NOUN", "PROPN") or word.dep == "compound":
        return False
    return any(w.lower in CAR_NAMES for w in (word, *parsed.kids(word.i, "compound")))


def _my_car(parsed: Parsed, word: Word) -> bool:
    """ "my corolla", "my honda civic" (the parse may hang "my" on "honda"), or a new one
    with no other owner: "took the new outback up to tahoe"; not one let go ("sold my
    civic")."""
    if word.dep == "dobj" and parsed.words[word.head].lemma in LET_GO:
        return False
    if any(_mine(parsed, w) for w in (word, *parsed.kids(word.i, "compound"))):
        return True
    new = any(k.lower == "new" for k in parsed.kids(word.i, "amod"))
    return new and not parsed.kids(word.i, "poss")


def _car_words(parsed: Parsed, word: Word) -> str:
    """The car's name: the noun, its compounds, and a number after it ("tesla model 3")."""
    parts = [k.i for k in parsed.kids(word.i, "compound", "nummod")] + [word.i]
    return " ".join(parsed.words[i].text for i in sorted(parts))


def _homeland(parsed: Parsed, word: Word) -> bool:
    """ "hometown", "home country", "native country"; not "my country", "my town"."""
    if word.pos != "NOUN":
        return False
    if word.lower in HOMELANDS:
        return not parsed.kids(word.i, "amod", "compound")
    mods = parsed.kids(word.i, "amod", "compound")
    return (
        word.lower in _HOMELAND_PARTS
        and len(mods) == 1
        and mods[0].lower in ("home", "native")
        and mods[0].i == word.i - 1
    )


def _apposed_name(parsed: Parsed, word: Word) -> str | None:
    """The bare proper name set beside ``word`` by a comma: "my home country, Sweden",
    "Austin, my hometown"."""
    beside = [k for k in parsed.kids(word.i, "appos")]
    if word.dep == "appos":
        beside.append(parsed.words[word.head])
    for name in beside:
        if name.pos == "PROPN" and not parsed.kids(name.i, "det", "poss") and name.tag == "NNP":
            return _title(parsed, name)
    return None


def _new(parsed: Parsed, word: Word) -> bool:
    return any(k.lower == "new" for k in parsed.kids(word.i, "amod", "compound"))


def _first(parsed: Parsed, word: Word) -> bool:
    return any(k.lower in ("first", "1st") for k in parsed.kids(word.i, "amod"))


def _named_place(
    parsed: Parsed, word: Word, preposition: str, excluded: frozenset[str], proper: bool = False
) -> str | None:
    """The name after ``word``'s preposition ("in gaia", "at kaiser oakland"): no article
    or owner, one thing (no plural), not a common word of ``excluded``; when ``proper``, a
    proper noun or a noun a name owns ("st thomas' hospital")."""
    for prep in parsed.kids(word.i, "prep"):
        if prep.lower != preposition:
            continue
        for name in parsed.kids(prep.i, "pobj"):
            owners = parsed.kids(name.i, "poss")
            named = proper and bool(owners) and all(o.pos == "PROPN" for o in owners)
            if parsed.kids(name.i, "det", "nummod") or (owners and not named):
                continue  # not "my place", but "st thomas' hospital" is a name
            if name.tag in ("NNS", "NNPS"):
                continue
            allowed = ("PROPN", "NOUN") if named or not proper else ("PROPN",)
            if name.pos not in allowed or name.lemma in excluded or name.lower in excluded:
                continue
            return _title(parsed, name)
    return None


def _title(parsed: Parsed, name: Word) -> str:
    """The name's words (with its compounds), capitalised when chat wrote them in lower case."""
    parts = [parsed.words[i] for i in range(name.left, name.i + 1)]
    text = "".join(w.text + (" " if w.space else "") for w in parts).strip()
    return " ".join(p[:1].upper() + p[1:] for p in text.split()) if text.islower() else text


def _new_job(parsed: Parsed, word: Word, speech: Speech) -> Passing | None:
    """ "congrats @tariq on the new job at spotify": the member congratulated — the turn's
    addressee — got a job there."""
    member = speech.you()
    if member is None or member.person is None:
        return None
    for job in _objects_of(parsed, word, "on"):
        if job.lemma not in JOBS:
            continue
        for prep in parsed.kids(job.i, "prep"):
            if prep.lower not in ("at", "with"):
                continue
            for place in parsed.kids(prep.i, "pobj"):
                if place.pos in ("PROPN", "NOUN") and not parsed.kids(place.i, "det", "poss"):
                    name, person = _title(parsed, place), member.person
                    return Passing(person, "identity", "employer", name,
                                   f"{person.name} got a new job at {name}.", "get", 0.7,
                                   speech.speaker.actor_id)  # fmt: skip
    return None


def _objects_of(parsed: Parsed, word: Word, preposition: str) -> list[Word]:
    """The objects of ``preposition`` after ``word`` in its phrase ("congrats … on X")."""
    found = []
    for prep in parsed.words[word.i + 1 :]:
        if prep.lower == preposition and prep.dep == "prep":
            found += parsed.kids(prep.i, "pobj")
    return found
