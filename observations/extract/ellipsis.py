"""Chat leaves out the subject when it is the speaker: "Researching adoption agencies",
"Been running longer lately", "Went to the park yesterday", "Gonna continue my edu".

A sentence whose main clause has no subject and starts (after "just", "finally"…) with a
verb in the -ing, past or participle form — an imperative starts with the base form, and
stays a request — is about the speaker. :func:`restored` is the sentence with the subject
and auxiliary put back ("I'm researching adoption agencies"); parsed again, it reads like
any other first-person sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from observations.extract.analysis import Parsed, Word, inflected_verb, known_noun, known_verb
from observations.extract.clauses import SUBJECTS
from observations.extract.dates import ResolvedDate
from observations.extract.vocabulary import (
    ABSTRACT,
    COGNITION,
    DIETS,
    FAMILY,
    ROLES,
    TIME_NOUNS,
    WEEKDAYS,
    words,
)

_LEADING = words("just finally recently also still actually literally so then now")
_NOT_KEEN = (["a", "fan"], ["a", "big"], ["big", "on"])  # after a leading "not"
_SPOKEN = {"been": "I've ", "gon": "I'm ", "gonna": "I'm ", "going": "I'm "}
_OF_TAG = {"VBG": "I'm ", "VBD": "I ", "VBN": "I "}


def restored(parsed: Parsed) -> str | None:
    """The text with each sentence's left-out first-person subject put back ("cycling now.
    grabbed a used bike": "I'm cycling now. I grabbed a used bike"), or None when no
    sentence left one out (or the text is a question)."""
    if not parsed.sentences or parsed.text.rstrip().endswith("?"):
        return None
    text, last, changed = [], 0, False
    for sentence in parsed.sentences:
        start = parsed.words[sentence[0]].start
        said = _restored_sentence(parsed, sentence)
        text.append(parsed.text[last:start])
        last = start
        if said is not None:
            text.append(said + parsed.text[start].lower())
            last, changed = start + 1, True
    return "".join([*text, parsed.text[last:]]) if changed else None


def _on_something(parsed: Parsed, sentence: range) -> bool:
    """A sentence that opens (after "also", "now"…) with "on" or "off" and a thing: what
    the speaker is on ("on doxycycline", "off caffeine"); not a day ("on friday we fly")."""
    said = (parsed.words[i] for i in sentence if parsed.words[i].lower not in _LEADING)
    opening = next(said, None)
    if opening is None or opening.lower not in ("on", "off") or opening.pos != "ADP":
        return False
    return any(
        w.pos in ("NOUN", "PROPN") and w.lower not in WEEKDAYS and w.lemma not in TIME_NOUNS
        for w in parsed.kids(opening.i, "pobj")
    )


def _restored_sentence(parsed: Parsed, sentence: range) -> str | None:
    """The subject and auxiliary a sentence left out ("I'm ", "I "); None when it has its
    subject or starts otherwise."""
    if _on_something(parsed, sentence):
        return "I'm "  # "also on doxycycline for 10 days", "now on bupropion 150"
    root = next((parsed.words[i] for i in sentence if parsed.words[i].head == i), None)
    first = _first_verb(parsed, sentence)
    if root is None or (parsed.kids(root.i, *SUBJECTS, "expl") and not _spliced(parsed, first)):
        return None
    opening = [parsed.words[i].lower for i in sentence[:3]]
    keen = opening[1:2] in (["into"], ["with"]) or opening[1:] in _NOT_KEEN
    diet = len(sentence) > 1 and parsed.words[sentence[1]].lemma in DIETS
    if opening[:1] == ["not"] and (keen or diet):
        return "I'm "  # "Not a fan of…", "not into horror", "not vegetarian anymore"
    if first is None:
        return None
    prefix = _SPOKEN.get(first.lower) or _OF_TAG.get(_tag(first))
    if first.lemma in DIETS or _adjectival(parsed, first):
        prefix = "I'm "  # "pescatarian actually!", "excited for the future"
    if first.lower == "been" and parsed.kids(first.i, "attr", "npadvmod"):
        return None  # "been a long road", "been a few days since…": its subject is "it"
    if prefix is None or first.dep in SUBJECTS:
        return None  # "Running is my therapy": a gerund that is the subject
    acted_on = parsed.kids(first.i, "dobj", "dative") + [
        k for c in parsed.kids(first.i, "ccomp", "xcomp") for k in parsed.kids(c.i, "nsubj")
    ]
    if any(k.lower in ("me", "us") for k in acted_on):
        return None  # "Reminded me of my mom", "Made me cry": its subject is "it", never "I"
    return prefix


def dated_noun(parsed: Parsed, dates: Sequence[ResolvedDate]) -> str | None:
    """A thing and its day with no verb ("physio on the 20th at 9", "haircut next
    tuesday"): the speaker's thing and when it is, written as a clause ("my physio is on
    the 20th at 9"); a person's role is a visit to them ("dentist thursday": "my dentist
    appointment is thursday"). Only a bare noun (no article, no owner, no number) opening
    a sentence with no verb before its first comma, the date right after it; what follows
    the comma becomes a sentence of its own ("dentist on the 12th, finally getting the
    crown done")."""
    if len(parsed.sentences) != 1 or parsed.text.rstrip().endswith("?") or not dates:
        return None
    sentence = parsed.sentences[0]
    comma = next((i for i in sentence if parsed.words[i].lower in (",", ";", "-")), None)
    said = sentence if comma is None else range(sentence.start, comma)
    if any(parsed.words[i].pos in ("VERB", "AUX") for i in said):
        return None
    # the phrase's head: its word whose own head is itself or outside the phrase
    tops = (w for w in map(parsed.words.__getitem__, said) if w.head == w.i or w.head not in said)
    root = next(tops, None)
    if root is None or parsed.kids(root.i, "det", "poss", "nummod"):
        return None
    # a capital at the start of a sentence makes a word a name to the tagger ("Haircut")
    if root.pos != "NOUN" and not (root.pos == "PROPN" and known_noun(root.lower)):
        return None
    before = [i for i in said if i <= root.i]
    if any(parsed.words[i].head != root.i and i != root.i for i in before):
        return None  # the words before the noun all modify it ("work offsite")
    start = parsed.words[before[0]].start
    date = dates[0]
    if date.span[0] < root.end or parsed.text[root.end : date.span[0]].strip():
        return None  # the date right after the thing ("yesterday, me and…" names none)
    visit = " appointment" if root.lemma in ROLES else ""  # "dentist on the 20th": a visit
    end = parsed.words[comma].start if comma is not None else len(parsed.text)
    if date.span[1] > end:
        return None
    thing = parsed.text[start : root.end]
    when, rest = parsed.text[date.span[0] : end], parsed.text[end + 1 :]
    # what follows the comma, a sentence of its own (the dates keep their places after it)
    return f"my {thing[:1].lower()}{thing[1:]}{visit} is {when}" + (f".{rest}" if rest else "")


def labelled(parsed: Parsed) -> str | None:
    """A sentence that opens with a label and a colon before a clause of its own
    ("rehearsal news: spring concert is set for…", "work stuff: my manager quit"): the
    clause alone. A label is at most three words with no verb, pronoun or owner, unless
    what follows opens with a past form and no subject ("update nobody asked for: sold the
    mazda": "I sold the mazda"); what follows a colon that is no clause is kept with it
    ("allergies: penicillin")."""
    colon = next((w for w in parsed.words[:4] if w.text == ":"), None)
    if colon is None or colon.i == 0:
        return None
    label, rest = parsed.words[: colon.i], parsed.words[colon.i + 1 :]
    if rest and _told_without_subject(parsed, rest[0]):
        return "I " + parsed.text[rest[0].start :]  # "update nobody asked for: sold the mazda"
    if any(w.pos in ("VERB", "AUX", "PRON") or w.dep == "poss" for w in label):
        return None
    verbs = [w for w in rest if w.pos in ("VERB", "AUX")]
    if not any(parsed.kids(v.i, *SUBJECTS) for v in verbs):
        return None
    return parsed.text[rest[0].start :] if rest else None


def _told_without_subject(parsed: Parsed, first: Word) -> bool:
    """A clause after a colon that opens with a past form and no subject of its own: what
    the speaker did, whatever the words before the colon ("update nobody asked for: sold
    the mazda")."""
    return (
        first.lower.isalpha()
        and inflected_verb(first.lower)
        and not parsed.kids(first.i, *SUBJECTS, "expl")
    )


def introduced(parsed: Parsed) -> str | None:
    """A speaker who gives their name and then what they are, after a comma ("I'm Sam, a
    nurse at St Mary's", "im marta, dispatcher at kestrel freight"): what they are, said as
    a clause of its own ("I'm a nurse at St Mary's"); the name is the speaker's display
    name or their naming, read elsewhere."""
    if len(parsed.sentences) != 1 or parsed.text.rstrip().endswith("?"):
        return None
    subject = next((w for w in parsed.words if w.dep in SUBJECTS), None)
    if subject is None or subject.lower != "i" or subject.i + 3 >= len(parsed.words):
        return None
    verb, name, comma = parsed.words[subject.i + 1 : subject.i + 4]
    named = name.pos == "PROPN" or not known_noun(name.lower)
    if verb.lower not in ("m", "'m", "am") or not named or comma.lower != ",":
        return None
    what = parsed.words[comma.i + 1]
    if what.pos in ("VERB", "AUX", "PRON") or what.lower in ("and", "but", "so"):
        return None  # "I'm Sam, and…", "I'm Sam, I work as…": a clause of its own already
    article = "" if what.pos == "DET" else "a "
    return f"I'm {article}{parsed.text[what.start :]}"


def _spliced(parsed: Parsed, first: Word | None) -> bool:
    """A past (or an "-ing" with its object) said first with no subject, spliced by a
    comma onto a clause that has one ("started yoga on tuesdays, my back is thanking me"):
    the parse hangs it on that clause's verb, whose subject is not its own."""
    if first is None or first.dep not in ("ccomp", "advcl", "conj", "parataxis"):
        return False
    if parsed.kids(first.i, *SUBJECTS, "expl"):
        return False
    if _tag(first) == "VBD":
        return True
    # an "-ing" with what it acts on, before what someone said or what a thing does
    # ("eating fish again, doc said…", "doing the kumano kodo route, luggage transfer
    # included"); not before what another does ("borrowing my dad's van, tom will drive":
    # it may tell of tom), nor "looking back, it was…"
    main = parsed.words[first.head]
    subjects = parsed.kids(main.i, *SUBJECTS)
    thing = bool(subjects) and all(w.pos == "NOUN" and w.lemma not in ROLES for w in subjects)
    said = main.lemma in COGNITION or thing
    return first.tag == "VBG" and said and bool(parsed.kids(first.i, "dobj"))


def _tag(word: Word) -> str:
    """The word's tag, but a past form the tagger read as the base form at the start of a
    sentence ("Booked the dentist for monday", VB as if an imperative) is past: it ends
    in -ed, as base forms do not (but those in -eed: "Need a haircut", "Feed the cat"),
    or it is no verb's base form in the lemmatizer's tables ("Got a new puppy")."""
    lower = word.lower
    if word.tag == "VB" and lower.endswith("ed") and not lower.endswith("eed") and len(lower) > 4:
        return "VBD"
    if word.tag == "VB" and word.pos == "VERB" and lower.isalpha() and not known_verb(lower):
        return "VBD"  # "Got a new puppy", "Went home early": no verb's base form
    return word.tag


def _adjectival(parsed: Parsed, word: Word) -> bool:
    """A participle that describes rather than tells ("excited for", "stoked about")."""
    if word.tag != "VBN" or not word.lower.endswith("ed"):
        return False
    if parsed.kids(word.i, "dobj", "dative", "prt"):
        return False
    return any(p.lower in ("for", "about", "with", "of") for p in parsed.kids(word.i, "prep"))


def _first_verb(parsed: Parsed, sentence: range) -> Word | None:
    for i in sentence:
        word = parsed.words[i]
        if word.lower in _LEADING:
            continue
        usable = word.pos in ("VERB", "AUX", "NOUN") or word.lower in _SPOKEN
        return word if usable or word.lemma in DIETS else None
    return None


def unpossessed(parsed: Parsed) -> str | None:
    """A sentence whose "'s" the parse read as the possessive of a name, or of someone's
    relation, that an adjective, a participle or "a" and a noun follows ("cleo's allergic
    to peanuts", "meera's pregnant so we'll need mocktails", "my sister's moving to
    lisbon", "my brother's a firefighter": "Cleo is allergic…"), or of a thing that a
    number follows ("rent's 860 here": no number is owned), with the "'s" written as
    "is"; None for any other sentence."""
    for word in parsed.words[1:-1]:
        owner = parsed.words[word.i - 1]
        kin = owner.pos == "NOUN" and any(k.dep == "poss" for k in parsed.kids(owner.i))
        said = next((w for w in parsed.words[word.i + 1 :] if w.tag != "RB"), None)
        counted = said is not None and said.tag == "CD" and owner.pos == "NOUN"
        if word.tag != "POS" or (owner.pos != "PROPN" and not kin and not counted):
            continue  # "my sister's moving", "rent's 860"
        if said is not None and said.lower in ("a", "an"):  # "my brother's a firefighter"
            said = parsed.words[said.head]  # the noun it is: the one "'s" was read to own
            if owner.head != said.i or said.pos != "NOUN" or counted:
                continue
        elif said is None or said.tag not in ("JJ", "VBG", "CD"):
            continue
        # not "cleo's new flat"; "my sister's getting married": both hang on "married"
        beside = said.dep in ("aux", "auxpass") and owner.head == said.head
        if said.head == owner.i or owner.head == said.i or beside:
            return f"{parsed.text[: word.start].rstrip()} is{parsed.text[word.end :]}"
    return None


_IT_IS = re.compile(r"(?i)(?:^|(?<=, )|(?<=,))\s*(?P<it>it['’]?s|it is|it was)\s+")
_THING_DEPS = ("dobj", "pobj", "nsubj", "nsubjpass", "attr", "conj", "appos")


def it_dated(parsed: Parsed, dates: Sequence[ResolvedDate], before: Parsed | None) -> str | None:
    """ "it's" with a day right after it ("booked my driving test!! its in 3 weeks", "a dress
    for my sister's wedding, it's next month on the 14th"): the thing said last before it,
    in this sentence or the one before of the same message, named in its place ("my
    driving test is in 3 weeks"). The thing is a noun with its owner ("my", "sam's"), no
    person, time or abstraction; None when there is none, or no day follows."""
    found = next(
        (m for m in _IT_IS.finditer(parsed.text) if any(d.span[0] == m.end() for d in dates)),
        None,
    )
    if found is None:
        return None
    here = [w for w in parsed.words if w.end <= found.start("it")]
    thing = _last_thing(parsed, here) or (
        _last_thing(before, before.words) if before is not None and not here else None
    )
    if thing is None:
        return None
    verb = "was" if found["it"].lower() == "it was" else "is"
    return f"{parsed.text[: found.start('it')]}{thing} {verb} {parsed.text[found.end() :]}"


def _last_thing(parsed: Parsed, words: Sequence[Word]) -> str | None:
    """The phrase of the last owned thing among ``words`` ("my driving test")."""
    for word in reversed(words):
        if word.pos != "NOUN" or word.dep not in _THING_DEPS:
            continue
        lemma = word.lemma.lower()
        if lemma in TIME_NOUNS or lemma in ABSTRACT or lemma in ROLES or lemma in FAMILY:
            return None  # the last thing is no thing to date: no guess further back
        owners = parsed.kids(word.i, "poss")
        if not owners:
            return None
        start = min(o.left for o in owners)
        return parsed.text[parsed.words[start].start : word.end]
    return None
