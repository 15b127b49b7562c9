"""Key parts from the parse: the topic a phrase is about, as a lemma.

A noun phrase's topic is its head noun's lemma ("window seats" → ``seat``, "strong black
coffee" → ``coffee``); a proper name's is the name ("New York" → ``new-york``). An
activity's is its -ing form ("to paint", "painting" → ``painting``), a category for
drinking, eating and listening ("to drink flat whites" → ``drink``), and the object's for
generic activities ("playing guitar" → ``guitar``).
"""

from __future__ import annotations

import re

from observations.extract.analysis import Parsed, Word
from observations.extract.text import gerund
from observations.extract.vocabulary import (
    ABSTRACT,
    ACTIVITY_CATEGORIES,
    GENERIC_ACTIVITIES,
    LIGHT_VERBS,
    ROLE_ALIASES,
    TIME_NOUNS,
    VAGUE,
)

_PART = 32  # characters of one key part at most
_NOT_WORD = re.compile(r"[^\w]+")
QUANTITIES = frozenset(("lot", "lots", "bunch", "couple", "ton", "tons", "plenty", "number"))
_OBJECTS = ("dobj", "pobj", "attr", "xcomp")


def part(text: str) -> str:
    """A key part: lower case, words joined by "-", at most 32 characters."""
    slug = _NOT_WORD.sub("-", text.casefold().replace("'", "").replace("’", "")).strip("-")
    return slug[:_PART].strip("-") or "general"


def name_of(parsed: Parsed, i: int) -> str:
    """A proper name with the names compounded into it ("New York", "St. Mary's")."""
    word = parsed.words[i]
    first = i
    while first > word.left and parsed.words[first - 1].dep == "compound":
        first -= 1
    if parsed.words[first].pos != "PROPN":
        first = i
    return " ".join(parsed.words[j].text for j in range(first, i + 1))


def noun_topic(parsed: Parsed, i: int) -> str:
    word = parsed.words[i]
    if word.pos == "PROPN":
        return part(name_of(parsed, i))
    if word.pos == "VERB":
        return activity_topic(parsed, i)
    return part(lemma_of(word))


def lemma_of(word: Word) -> str:
    """The lemma, unless the lemmatizer strayed from the word ("thai" → "bing")."""
    return word.lemma if word.lemma[:2] == word.lower[:2] else word.lower


def activity_topic(parsed: Parsed, i: int) -> str:
    """The topic of an activity word: a category, its object, or its -ing form."""
    lemma = parsed.words[i].lemma
    if lemma in ACTIVITY_CATEGORIES:
        return ACTIVITY_CATEGORIES[lemma]
    if lemma in GENERIC_ACTIVITIES:
        objects = parsed.kids(i, *_OBJECTS) + [
            o for p in parsed.kids(i, "prep") for o in parsed.kids(p.i, "pobj")
        ]
        if objects:
            return noun_topic(parsed, objects[0].i)
    return part(gerund(lemma))


def topic_of(parsed: Parsed, i: int) -> str:
    """The topic of a complement word: an activity's or a noun's."""
    word = parsed.words[i]
    if word.pos in ("VERB", "AUX") and word.tag != "VBN":
        return activity_topic(parsed, i)
    return noun_topic(parsed, i)


def skill_topic(parsed: Parsed, i: int) -> str:
    """A skill's topic keeps a specific activity's object ("baking bread" → ``baking-bread``,
    "fix bikes" → ``fixing-bike``; "playing guitar" → ``guitar``)."""
    word = parsed.words[i]
    topic = topic_of(parsed, i)
    objects = parsed.kids(i, "dobj")
    if word.pos != "VERB" or word.lemma in GENERIC_ACTIVITIES or not objects:
        return topic
    return part(f"{topic}-{noun_topic(parsed, objects[0].i)}")


def role(word: Word) -> str:
    """The normalised relationship role: "Mom" → "mother", "sisters" → "sister"."""
    lemma = word.lemma if word.lemma else word.lower
    return part(ROLE_ALIASES.get(lemma, lemma))


def verb_noun(parsed: Parsed, verb: int) -> str:
    """``<verb lemma>-<object topic>``, the topic of a clause no rule names more closely
    ("I tried sushi" → ``try-sushi``; "went hiking" → ``hike``)."""
    lemma = parsed.words[verb].lemma
    activity = [k for k in parsed.kids(verb, "xcomp") if k.pos == "VERB"]
    chained = lemma in GENERIC_ACTIVITIES or lemma == "use"  # "went hiking", "used to live"
    if chained and activity and not parsed.kids(verb, "dobj"):
        return verb_noun(parsed, activity[0].i)
    found = first_object(parsed, verb)
    if found is None:
        return part(lemma)
    return f"{part(lemma)}-{topic_of(parsed, found)}"


def concrete(parsed: Parsed, verb: int) -> bool:
    """Whether an action says something specific: its verb carries meaning of its own
    ("sail", "hike") or its object does ("went to a farm"; not "made so much progress",
    "is helping others", "found Caroline's true self")."""
    found = first_object(parsed, verb)
    if found is None:
        return parsed.words[verb].lemma not in LIGHT_VERBS
    word = parsed.words[found]
    if word.pos == "PROPN":
        return True
    if word.pos in ("VERB", "AUX"):
        return concrete(parsed, found)
    light = parsed.words[verb].lemma in LIGHT_VERBS and word.lemma == "job"  # "doing a great job"
    vague = lemma_of(word) in ABSTRACT | TIME_NOUNS
    return word.pos == "NOUN" and not vague and not light


def _counted(parsed: Parsed, verb: int, word: Word) -> Word:
    """What a quantity done counts: "visited a lot of delicious cafes" → "cafes"; else the
    word (and for what one has: "has a lot of significance" says no more than "has")."""
    if word.lemma not in QUANTITIES or parsed.words[verb].lemma in ("have", "get", "be"):
        return word
    of = [p for p in parsed.kids(word.i, "prep") if p.lower == "of"]
    counted = [o for p in of for o in parsed.kids(p.i, "pobj")]
    return counted[0] if counted else word


def first_object(parsed: Parsed, verb: int) -> int | None:
    """The first object-like word of a verb: its object or complement, a verb it governs
    ("want to learn to sail" → ``learn``), else a prepositional object that is no time (of
    the verb's own preposition, or of one of its adverb's: "flew back from lisbon")."""
    for dep in ("dobj", "attr", "acomp", "oprd", "dative", "xcomp", "ccomp"):
        found = [
            w
            for w in [_counted(parsed, verb, w) for w in parsed.kids(verb, dep)]
            if w.pos != "PRON"
            and w.lemma not in VAGUE
            and not parsed.kids(w.i, "nsubj", "nsubjpass")
        ]
        if found:
            return found[0].i
    # a preposition of the verb's, or of its adverb or particle ("flew back from lisbon")
    preps = parsed.kids(verb, "prep") + [
        p for a in parsed.kids(verb, "advmod", "prt") for p in parsed.kids(a.i, "prep")
    ]
    for prep in preps:
        objects = parsed.kids(prep.i, "pobj", "pcomp")
        if objects and objects[0].lemma not in TIME_NOUNS | VAGUE and objects[0].pos != "NUM":
            return objects[0].i
    return None
