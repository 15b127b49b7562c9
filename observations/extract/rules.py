"""The fact rules: a clause's frame → kind, key topic, value and polarity.

Keys are ``<kind>:<topic>`` where the topic comes from the parse (:mod:`.topics`):

* preference:<topic> — love/like/enjoy/prefer/hate…, "a fan of", "into", "my favorite X
  is" (topic X); liking and disliking share the key, the polarity tells them apart;
* identity:<attribute> — occupation, employer, city, origin, car, name, age, education,
  gender, orientation, relationship-status, parent (one value each: a new value
  supersedes the old whatever the words);
* constraint:diet (vegetarian, vegan…), constraint:allergy:<thing>, constraint:diet:<food>
  ("don't eat meat"), constraint:<verb>[-<noun>] ("can't travel on Sundays");
* relationship:<role>[:<name>] ("I have a sister named Lena");
* skill:<topic> — know, speak, play, can, good at, "have been painting for years";
* goal:<verb>[-<noun>] — want/plan/hope/would like/going to, "my goal is to";
* experience:<verb>[-<noun>] — any other action of the person with an object.

Negation is the reading's polarity: "I'm no longer vegetarian" is constraint:diet,
negative, so it supersedes "vegetarian".
"""

from __future__ import annotations

from collections.abc import Callable

from observations.extract.analysis import Word
from observations.extract.frames import Frame, Reading
from observations.extract.topics import (
    activity_topic,
    noun_topic,
    role,
    skill_topic,
    topic_of,
    verb_noun,
)
from observations.extract.vocabulary import (
    DIETS,
    DISLIKE,
    FAVORITE,
    GENDER,
    GOAL_NOUNS,
    JOBS,
    KEEN,
    LIKE,
    OCCUPATIONS,
    ORIENTATION,
    OWN_ATTRIBUTES,
    ROLES,
    SKILLED,
    STATUS,
    TRYING,
    VEHICLES,
    WANT,
    words,
)

Rule = Callable[[Frame], Reading | None]
_NOT_ACTIONS = words(
    """be think guess know mean feel hope wish wonder agree bet suppose believe imagine
    remember forget understand seem look sound let thank appreciate tell ask say talk chat
    reply answer congratulate apologize apologise promise need want miss check keep
    realize realise notice mind glad love like enjoy prefer hate see hear wait"""
)


def _reading(f: Frame, kind: str, topic: str, value: int | None, conf: float) -> Reading:
    return Reading(kind, topic, value, f.lemma, conf, f.negative)


def attribute(f: Frame) -> Reading | None:
    """Said of a "my <noun>": "My favorite drink is a flat white", "my goal is to run…"."""
    noun = f.subject_noun
    if noun is None or (not f.copula and f.xcomp() is None):
        return None
    values = f.comps() or f.objects() or f.preps()
    if not values:
        return None
    value = values[0]
    mods = {k.lemma for k in f.parsed.kids(noun.i, "amod", "compound")}
    if mods & FAVORITE:
        return _reading(f, "preference", noun_topic(f.parsed, noun.i), value.i, 0.9)
    if noun.lemma in GOAL_NOUNS:
        return _reading(f, "goal", verb_noun(f.parsed, value.i), value.i, 0.85)
    if noun.lemma in OWN_ATTRIBUTES:
        kind, topic = OWN_ATTRIBUTES[noun.lemma]
        return _reading(f, kind, topic, value.i, 0.9)
    return None


def copula(f: Frame) -> Reading | None:
    """A state: "I'm vegetarian", "I'm a nurse", "I'm allergic to peanuts", "I'm from Sweden"."""
    if not f.copula:
        return None
    for comp in f.comps():
        found = _state(f, comp)
        if found is not None:
            return found
    for place in f.preps("from"):
        return _reading(f, "identity", "origin", place.i, 0.85)
    for thing in f.preps("into"):
        return _reading(f, "preference", topic_of(f.parsed, thing.i), thing.i, 0.75)
    return None


def _state(f: Frame, comp: Word) -> Reading | None:
    lemma, kids = comp.lemma, f.kids(of=comp.i)
    mods = {k.lemma for k in kids if k.dep in ("amod", "compound", "npadvmod")}
    if lemma in DIETS or lemma == "intolerant":
        return _reading(f, "constraint", "diet", comp.i, 0.85)
    if lemma == "allergic":
        things = f.preps("to", of=comp.i)
        if not things:
            return None
        topic = f"allergy:{noun_topic(f.parsed, things[0].i)}"
        return _reading(f, "constraint", topic, things[0].i, 0.9)
    if lemma in STATUS:
        return _reading(f, "identity", "relationship-status", comp.i, 0.85)
    if lemma in GENDER or mods & GENDER:
        return _reading(f, "identity", "gender", comp.i, 0.85)
    if lemma in ORIENTATION:
        return _reading(f, "identity", "orientation", comp.i, 0.85)
    if lemma in SKILLED or lemma in KEEN or lemma == "fan":
        return _keen(f, comp.i, lemma)
    number = [k for k in f.parsed.words[comp.left : comp.i] if k.tag == "CD"]
    if lemma == "old" and number:
        return _reading(f, "identity", "age", number[0].i, 0.9)
    if comp.pos == "NOUN" and lemma in OCCUPATIONS and comp.dep == "attr":
        return _reading(f, "identity", "occupation", comp.i, 0.8)
    if lemma in ("mother", "father", "mom", "dad", "parent") and comp.dep == "attr":
        return _reading(f, "identity", "parent", comp.i, 0.8)
    if lemma in ("based", "located") and f.preps("in", of=comp.i):
        return _reading(f, "identity", "city", f.preps("in", of=comp.i)[0].i, 0.8)
    return None


def _keen(f: Frame, comp: int, lemma: str) -> Reading | None:
    things = f.preps("at", "in", "with", "of", "about", "on", of=comp)
    if not things:
        return None
    topic = topic_of(f.parsed, things[0].i)
    if lemma in SKILLED:
        return _reading(f, "skill", skill_topic(f.parsed, things[0].i), things[0].i, 0.75)
    return _reading(f, "preference", topic, things[0].i, 0.75)


def status(f: Frame) -> Reading | None:
    """A change of status: "I got married last May", "we're engaged"."""
    if f.head.lower in STATUS and f.head.tag == "VBN" and f.kids("auxpass", "aux"):
        return _reading(f, "identity", "relationship-status", None, 0.85)
    return None


def liking(f: Frame) -> Reading | None:
    """A liking: "I love strong black coffee", "I prefer aisle seats", "I can't stand cilantro"."""
    stand = f.lemma == "stand" and f.modal == "can" and f.negative
    if (f.lemma not in LIKE | DISLIKE and not stand) or f.past or f.modal in ("would", "will"):
        return None
    things = [w for dep in ("dobj", "xcomp", "attr", "advmod") for w in f.kids(dep)]
    thing = next((w for w in things if w.pos != "ADV"), None)
    if thing is None:
        return None
    negative = f.negative != (f.lemma in DISLIKE or stand)
    topic = topic_of(f.parsed, thing.i)
    return Reading("preference", topic, thing.i, f.lemma, 0.75, negative)


def work(f: Frame) -> Reading | None:
    """Work: "I work as a nurse at St. Mary's", "I started a new job as an analyst at Google"."""
    anchor = f.head.i
    if f.lemma != "work":
        jobs = [o for o in f.kids("dobj") if o.lemma in JOBS]
        if not jobs or f.lemma not in ("start", "get", "land", "take", "accept", "have", "begin"):
            return None
        anchor = jobs[0].i
    elif f.past:
        return None
    for role_word in f.preps("as", of=anchor):
        return _reading(f, "identity", "occupation", role_word.i, 0.9)
    for employer in f.preps("at", "for", "with", of=anchor):
        return _reading(f, "identity", "employer", employer.i, 0.85)
    return None


def place(f: Frame) -> Reading | None:
    """Where one lives or comes from: "I live in Lisbon", "we moved to Amsterdam"."""
    if f.lemma in ("live", "reside") and not f.past:
        found = f.preps("in")
        return _reading(f, "identity", "city", found[0].i, 0.8) if found else None
    if f.lemma in ("move", "relocate"):
        found = f.preps("to")
        return _reading(f, "identity", "city", found[0].i, 0.8) if found else None
    origin = {"come": ("from",), "grow": ("in",), "bear": ("in",), "raise": ("in",)}
    if f.lemma in origin:
        found = f.preps(*origin[f.lemma])
        return _reading(f, "identity", "origin", found[0].i, 0.85) if found else None
    return None


def study(f: Frame) -> Reading | None:
    if f.lemma not in ("study", "major"):
        return None
    found = f.kids("dobj") or f.preps("in")
    return _reading(f, "identity", "education", found[0].i, 0.75) if found else None


def vehicle(f: Frame) -> Reading | None:
    """A car: "I drive a Tesla", "I bought a new car"."""
    cars = f.kids("dobj")
    if not cars or f.lemma not in ("drive", "own", "buy", "get", "lease", "have"):
        return None
    car = cars[0]
    if f.lemma != "drive" and car.lemma not in VEHICLES:
        return None
    return _reading(f, "identity", "car", car.i, 0.8)


def kin(f: Frame) -> Reading | None:
    """Kin and pets: "I have a sister named Lena", "we adopted a puppy"."""
    if f.lemma not in ("have", "get", "adopt"):
        return None
    for found in f.kids("dobj"):
        if found.lemma in ROLES:
            name = _given_name(f, found.i)
            topic = role(found) + (f":{name}" if name else "")
            return _reading(f, "relationship", topic, found.i, 0.8)
    return None


def _given_name(f: Frame, noun: int) -> str | None:
    for word in f.kids("appos", "acl", of=noun):
        if word.pos == "PROPN":
            return word.lower
        named = f.kids("oprd", of=word.i)
        if word.lemma in ("name", "call") and named:
            return named[0].lower
    return None


def skill(f: Frame) -> Reading | None:
    """A skill: "I know Rust", "I speak French", "I can swim", "I've been painting for years"."""
    if f.lemma in ("know", "speak", "learn") and not f.negative:
        how = f.xcomp()
        if how is not None:
            return _reading(f, "skill", skill_topic(f.parsed, how.i), how.i, 0.75)
        things = [o for o in f.kids("dobj") if o.pos in ("PROPN", "NOUN")]
        if things and (f.lemma != "know" or things[0].pos == "PROPN"):
            return _reading(f, "skill", noun_topic(f.parsed, things[0].i), things[0].i, 0.75)
    if f.modal == "can" and not f.negative and f.head.pos == "VERB" and f.lemma not in _NOT_ACTIONS:
        return _reading(f, "skill", skill_topic(f.parsed, f.head.i), None, 0.7)
    practised = any(p.lemma in ("year", "decade") for p in f.preps("for"))
    if f.head.tag == "VBG" and any(k.lower == "been" for k in f.kids("aux")) and practised:
        return _reading(f, "skill", activity_topic(f.parsed, f.head.i), None, 0.75)
    return None


def constraint(f: Frame) -> Reading | None:
    """A constraint: "I can't travel on Sundays", "I don't eat meat", "I avoid gluten"."""
    if f.lemma in ("eat", "drink") and not f.past:
        things = f.kids("dobj")
        if things and f.negative:
            topic = f"diet:{noun_topic(f.parsed, things[0].i)}"
            return _reading(f, "constraint", topic, things[0].i, 0.8)
    if f.lemma == "avoid" and f.kids("dobj"):
        thing = f.kids("dobj")[0]
        return Reading("constraint", noun_topic(f.parsed, thing.i), thing.i, "avoid", 0.75, True)
    if f.modal == "can" and f.negative and f.head.pos == "VERB" and f.lemma not in _NOT_ACTIONS:
        return _reading(f, "constraint", verb_noun(f.parsed, f.head.i), None, 0.75)
    return None


def goal(f: Frame) -> Reading | None:
    """A goal: "I want to learn to sail", "I'd love to visit Japan", "I'm planning to run…"."""
    action = f.xcomp()
    if action is None or action.pos != "VERB":
        return None
    wants = f.lemma in WANT or (f.modal == "would" and f.lemma in LIKE)
    planning = f.head.tag == "VBG" and (f.lemma in TRYING or f.lemma == "go")
    if not (wants or planning) or f.past:
        return None
    if f.parsed.words[action.i].lemma in _NOT_ACTIONS - {"try"}:
        return None
    return _reading(f, "goal", verb_noun(f.parsed, action.i), action.i, 0.75)


def action(f: Frame) -> Reading | None:
    """Any other action of the person with an object: an experience ("I tried sushi")."""
    if f.head.pos != "VERB" or f.lemma in _NOT_ACTIONS or f.modal not in (None, "will"):
        return None
    if f.head.tag == "VB" and f.modal is None and not f.kids("aux"):
        return None
    topic = verb_noun(f.parsed, f.head.i)
    if "-" not in topic:
        return None
    kind = "goal" if f.modal == "will" else "experience"
    return _reading(f, kind, topic, None, 0.7)


RULES: tuple[Rule, ...] = (
    attribute,
    copula,
    status,
    goal,
    liking,
    work,
    place,
    study,
    vehicle,
    kin,
    skill,
    constraint,
    action,
)


def read(f: Frame) -> Reading | None:
    """The first rule's reading of the clause, if any rule reads it."""
    for rule in RULES:
        found = rule(f)
        if found is not None:
            return found
    return None
