"""Atoms: one fact per clause, as a self-contained statement with its reading and value.

A clause becomes an atom when it states something (no question, no condition, no hedge
such as "I hope I…"), its subject is a person (the speaker, a member, a relation, a named
person), every pronoun in it means someone (:mod:`.references`), and a fact rule reads
it (:mod:`.rules`). The statement is the clause written back with names for pronouns
("Maya Chen", "Maya Chen's knee"), verbs agreeing with them ("Maya Chen flies"), absolute
dates, and no fillers; the value is the phrase of the word the rule names, whole ("St.
Mary's", "1:48").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from observations.extract.analysis import Parsed, Word, as_name
from observations.extract.clauses import (
    FINITE_TAGS,
    SUBJECTS,
    Clause,
    framed_clauses,
    participle,
    relative_clauses,
    split_clauses,
)
from observations.extract.dates import ResolvedDate
from observations.extract.frames import Reading, frame_of
from observations.extract.inflect import agreeing, third_person, written_out
from observations.extract.lexicon import SPOKEN_FORMS
from observations.extract.references import (
    CORE,
    FIRST,
    Referent,
    Speech,
    given_name,
    is_pronoun,
    kin_name,
    mine,
    named,
    points_nowhere,
    possessive,
    pronoun,
    the_kin,
    they,
    written,
)
from observations.extract.render import render, sentence_case, strip_article
from observations.extract.rule_table import (
    FIRST_ROWS,
    LAST_ROWS,
    Match,
    Person,
    Row,
    acted_on,
    matching_row,
    person_in,
)
from observations.extract.rules import DATED_ONLY, read
from observations.extract.topics import noun_topic, role
from observations.extract.vocabulary import (
    BARE_INFINITIVE_AFTER,
    COGNITION,
    FAMILY,
    GETTING,
    ROLES,
    words,
)

_CONDITIONS = words("if unless when whenever whether once where wherever though")
_DOUBTS = words("maybe perhaps possibly probably prob probs")  # anywhere in the clause
_HEDGES = _DOUBTS | words(
    "hope wish wonder doubt imagine suppose guess bet ask if whether unless hopefully glad"
)
_ASKED_WHO = words("who what which whoever")  # a subject the tagger's wh-tags are too loose for
_INTENSIFIERS = words(
    "even definitely really totally actually literally absolutely seriously also personally finally"
)
# reflexives that only stress when they are no object ("I did it myself")
_EMPHATIC = words("myself ourselves yourself yourselves himself herself themselves")
# said after a comma at the end ("lol", "tbh" and the like are gone already: text.tidy)
_TAIL_WORDS = words("sorry yay ugh oops sadly thankfully tho though rn")
# a lead-in on what the rest is for or about, not when or where it holds
_ASIDE_PREPOSITIONS = words("for about re regarding")
_QUOTES = frozenset(('"', "“", "”", "''", "``"))
_ENDS = frozenset((".", "!", "?", ":", ";"))  # marks that end what is said before a clause
_PRONOUN_SUBJECTS = frozenset(("i", "you", "we"))
_SPEAKER_WORDS = frozenset(("i", "we"))
_FINITE = (*FINITE_TAGS, "MD")
_WH = ("WP", "WRB", "WDT", "WP$")


@dataclass(frozen=True, slots=True)
class Atom:
    """A clause read as a fact about a person."""

    about: Referent
    reading: Reading
    statement: str
    value: str
    dates: tuple[ResolvedDate, ...]  # the date phrases in the clause
    persons: tuple[str, ...]  # the other people it names
    # a relation found by a pronoun or by a name or role alone ("he's paying", "gp upped"),
    # not said as the speaker's ("my dad had his knee surgery"): less sure to be theirs
    resolved: bool = False


def sentence_atoms(parsed: Parsed, dates: Sequence[ResolvedDate], speech: Speech) -> list[Atom]:
    """The atoms of one parsed sentence (of a turn), in order."""
    atoms = []
    for sentence in parsed.sentences:
        for clause in split_clauses(parsed, sentence):
            _note(parsed, clause, speech)
            asked = clause.question or clause.mark in _CONDITIONS
            more = (
                []
                if asked
                else [*framed_clauses(parsed, clause), *relative_clauses(parsed, clause)]
            )
            for own in (clause, *more):
                atom = clause_atom(parsed, own, dates, speech)
                if atom is not None:
                    atoms.append(atom)
    return atoms


def clause_atom(
    parsed: Parsed, clause: Clause, dates: Sequence[ResolvedDate], speech: Speech
) -> Atom | None:
    atom = _clause_atom(parsed, clause, dates, speech)
    if atom is not None and atom.reading.rule == DATED_ONLY and not atom.dates:
        return None  # "I'm visiting": a coming or going says nothing without its day
    if atom is None or atom.about.kind != "relation" or clause.subject is None:
        return atom
    mine = _said_as_mine(parsed, clause.subject, atom.about)
    return dataclasses.replace(atom, resolved=not mine)


def _said_as_mine(parsed: Parsed, subject: int, about: Referent) -> bool:
    """Whether the subject is said with "my"/"our", on it or on a word beside it ("my
    sister hana", "arjun (my bf)"), as kin chat names without "my" ("dad"), or by the
    given name of a relation the speaker named with its role ("my manager priya" …
    "priya's transferring")."""
    word = parsed.words[subject]
    said = [subject, *(k.i for k in parsed.kids(subject, "appos", "compound"))]
    if any(mine(parsed, parsed.words[i]) for i in said):
        return True
    if word.lower in FAMILY and not parsed.kids(subject, "det"):
        return True  # "dad had the knee surgery": kin chat names without "my"
    return about.given is not None and about.role is not None and word.lower == about.given


def _clause_atom(
    parsed: Parsed, clause: Clause, dates: Sequence[ResolvedDate], speech: Speech
) -> Atom | None:
    if not _factual(parsed, clause) or _of_another(parsed, clause, speech):
        return None
    if _done_together(parsed, clause):
        return None
    subject = _about(parsed, clause, speech)
    typed = _typed_atom(parsed, clause, speech, subject, dates, FIRST_ROWS)
    if typed is not None or subject is None:
        return typed or _typed_atom(parsed, clause, speech, subject, dates, LAST_ROWS)
    about, noun = subject
    words = _statement_words(parsed, clause, dates)
    replace = voice(parsed, clause, words, speech)
    frame = frame_of(parsed, clause, noun)
    reading = read(frame) if replace is not None else None
    if replace is None or reading is None:
        return _typed_atom(parsed, clause, speech, subject, dates, LAST_ROWS)
    if _said_to_the_listener(parsed, clause, reading, frame.modal):
        return None
    inside = _dates_in(parsed, words, dates)
    statement = _introduced(sentence_case(render(parsed, words, replace, inside)), about)
    value = _value(parsed, clause, reading, words, replace, inside)
    persons = _persons(parsed, words, about, speech)
    return Atom(about, reading, statement, value, inside, persons) if value else None


def _introduced(statement: str, about: Referent) -> str:
    """A statement that opens with a relation's given name alone ("Karim got a job at the
    port authority") opens with who they are ("Nadia's brother Karim got a job…"): the
    fact is filed under the speaker, and stands on its own."""
    if about.kind != "relation" or not about.given or about.person is None:
        return statement
    name = about.short
    full = about.name if about.name.endswith(f" {name}") else None
    full = full or f"{possessive(about.person.name)} {about.called or about.role} {name}"
    if statement.startswith(full) or not statement.startswith((f"{name} ", f"{name}'s ")):
        return statement
    return full + statement[len(name) :]


_LISTENER = frozenset(("you", "your", "yours"))  # chat's "u" and "ur" are spelled out first


def _said_to_the_listener(
    parsed: Parsed, clause: Clause, reading: Reading, modal: str | None
) -> bool:
    """Praise of the listener's thing ("I love your commitment") or a promise to the
    listener ("I'll send you the video", "I'll take your advice"): what the conversation
    is doing, not a lasting fact of the speaker's."""
    if reading.kind == "preference" and reading.value is not None:
        owners = parsed.kids(reading.value, "poss")
        return any(o.lower in _LISTENER for o in owners)
    if reading.kind == "goal" and modal == "will":
        return any(parsed.words[i].lower in _LISTENER for i in clause.words)
    return False


def _done_together(parsed: Parsed, clause: Clause) -> bool:
    """ "we" doing something with one another ("we met in an engineering class", "we
    quickly became friends", "we explore together"): a fact of the group, which the
    speaker's name alone would misstate ("Jolene met in an engineering class")."""
    if clause.subject is None or parsed.words[clause.subject].lower not in ("we", "us"):
        return False
    said = [parsed.words[i].lower for i in clause.words]
    reciprocal = "together" in said or ("other" in said and ("each" in said or "one" in said))
    return reciprocal or parsed.words[clause.head].lemma in ("meet", "become")


def _typed_atom(
    parsed: Parsed,
    clause: Clause,
    speech: Speech,
    subject: tuple[Referent, Word | None] | None,
    dates: Sequence[ResolvedDate],
    rows: Sequence[Row],
) -> Atom | None:
    """The clause as a row of the rule table reads it (:mod:`.rule_table`): a typed value
    of the person's. A clause whose subject names the person is its own statement ("Tom
    Okafor makes 72k right now at the agency."), unless its row says its words are
    unclear ("i'm on 60k"); one that names them otherwise is stated from the row's
    template ("they bumped me to 68k": "Ines Duarte earns 68k.")."""
    readings: list[tuple[Referent, Person, Word | None]] = []
    acted = person_in(parsed, clause)
    if acted is not None:  # the speaker acted on is whom the value concerns: "she put me on…"
        readings.append((speech.me, acted, None))
        mine = _my_object(parsed, clause)
        if mine is not None:  # "dr patel scheduled my hip replacement for november"
            readings.append((speech.me, "owned", mine))
    if subject is not None:
        about, owned = subject
        readings.append((about, "subject" if owned is None else "owned", owned))
    thing = _unowned_thing(parsed, clause) if subject is None else None
    if thing is not None:
        readings.append((speech.me, "owned", thing))
    for about, where, owned in readings:
        found = matching_row(frame_of(parsed, clause, owned), where, owned, dates, rows)
        if found is None:
            continue
        atom = _row_atom(parsed, clause, about, found)
        said_of = where != "object" and subject is not None and not found.row.templated
        own = _own_statement(parsed, clause, dates, speech) if said_of else None
        return atom if own is None else dataclasses.replace(atom, statement=own[0], dates=own[1])
    return None


def _own_statement(
    parsed: Parsed, clause: Clause, dates: Sequence[ResolvedDate], speech: Speech
) -> tuple[str, tuple[ResolvedDate, ...]] | None:
    """The clause written back with names and absolute dates, and its dates; None when a
    word of it points at nobody."""
    words = _statement_words(parsed, clause, dates)
    written = voice(parsed, clause, words, speech)
    if written is None:
        return None
    inside = _dates_in(parsed, words, dates)
    return sentence_case(render(parsed, words, written, inside)), inside


def _dates_in(
    parsed: Parsed, words: Sequence[int], dates: Sequence[ResolvedDate]
) -> tuple[ResolvedDate, ...]:
    """The date phrases that fall among ``words``."""
    return tuple(
        d for d in dates if any(d.span[0] <= parsed.words[i].start < d.span[1] for i in words)
    )


def _row_atom(parsed: Parsed, clause: Clause, about: Referent, found: Match) -> Atom:
    row, value = found.row, found.value
    thing = _thing(parsed, clause, found.thing) if found.thing is not None else ""
    topic = noun_topic(parsed, found.thing.i) if found.thing is not None else ""
    slots = {"person": about.name, "thing": thing, "topic": topic, "name": found.name or "",
             "value": value.text}  # fmt: skip
    topic = row.attribute.format(**slots)
    reading = Reading(row.kind, topic, value.number, parsed.words[clause.head].lemma,
                      row.confidence, found.negative, row.name, value.type)  # fmt: skip
    statement = sentence_case(row.template.format(**slots))
    return Atom(about, reading, statement, value.text, (), ())


def _thing(parsed: Parsed, clause: Clause, noun: Word) -> str:
    """The thing's phrase without its article or owner, within the clause ("my dentist
    appointment" → "dentist appointment")."""
    said = [i for i in parsed.subtree(noun.i) if i in clause.words]
    kept = [parsed.words[i] for i in said if parsed.words[i].dep not in ("det", "poss", "case")]
    return "".join(w.text + (" " if w.space else "") for w in kept).strip().lower()


def _my_object(parsed: Parsed, clause: Clause) -> Word | None:
    """The speaker's thing another acts on ("moved my review", "booked our flights")."""
    for thing in parsed.kids(clause.head, "dobj"):
        if mine(parsed, thing):
            return thing
    return None


def _unowned_thing(parsed: Parsed, clause: Clause) -> Word | None:
    """The subject of a clause when it is a thing with no owner said ("rent is 1450 a
    month"): the speaker's, said of their own."""
    if clause.subject is None:
        return None
    word = parsed.words[clause.subject]
    if word.pos != "NOUN" or parsed.kids(word.i, "poss"):
        return None
    return word


def _as_long_as(parsed: Parsed, clause: Clause) -> bool:
    """A condition said with "as long as" or "so long as" ("as long as she doesnt bring
    walnuts"): its subordinator is the clause's "as", after "as long" or "so long"."""
    if clause.mark != "as":
        return False
    first = min(clause.words)
    said = [w.lower for w in parsed.words[max(0, first - 3) : first]]
    return said in (["as", "long", "as"], ["so", "long", "as"])


def _factual(parsed: Parsed, clause: Clause) -> bool:
    """A statement of fact: no question, condition or hedge ("I hope I get it")."""
    if clause.question or clause.mark in _CONDITIONS or not clause.words:
        return False
    if clause.subject is not None and parsed.words[clause.subject].lower in _ASKED_WHO:
        return False  # "guess who got promoted": who is asked, not said
    if _as_long_as(parsed, clause):
        return False
    if any(parsed.words[i].lower in _DOUBTS for i in clause.words):
        return False  # "…visit a rescue in june maybe": not said as so
    if not _finite(parsed, clause) or not _opens_with_subject(parsed, clause):
        return False
    if _misread_am(parsed, clause):
        return False
    if _asked_to_confirm(parsed, clause):
        return False
    if clause.link == "ccomp" and clause.parent is not None:
        parent = parsed.words[clause.parent]
        if _spliced(parsed, clause, parent):
            return True
        negated = any(k.dep == "neg" for k in parsed.kids(parent.i))
        doubted = negated and parent.lemma in COGNITION and not _aside(parsed, clause, parent)
        return parent.lemma not in _HEDGES and not doubted
    return True


def _spliced(parsed: Parsed, clause: Clause, parent: Word) -> bool:
    """A statement before a comma that the parse hung on the next clause's verb, which
    has a complement of its own ("my parents' dinner is on the 3rd, im supposed to book
    the restaurant", "we split up, dana moved back to her sister's"): two sentences joined
    by a comma, not a thing hoped or supposed ("the dinner is on the 3rd, i suppose"
    keeps its hedge)."""
    if clause.head > parent.i or clause.mark is not None:
        return False
    between = range(clause.words[-1] + 1, parent.i)
    comma = any(parsed.words[i].lower in (",", ";") for i in between)
    complements = ("xcomp", "dobj", "ccomp", "prep", "attr", "acomp", "dative", "advcl")
    own = [k for k in parsed.kids(parent.i, *complements) if k.i > parent.i]
    return comma and bool(own)


def _asked_to_confirm(parsed: Parsed, clause: Clause) -> bool:
    """A clause that ends in a "right" asking to confirm it, with no question mark ("we
    cant foster that kitten right, ur allergic to cats"): not a statement of fact."""
    said = [parsed.words[i] for i in clause.words if parsed.words[i].pos != "PUNCT"]
    if len(said) < 3 or said[-1].lower != "right" or said[-1].dep not in ("advmod", "intj"):
        return False
    return parsed.words[said[-1].head].lemma not in ("turn", "go", "be", "get")


def _misread_am(parsed: Parsed, clause: Clause) -> bool:
    """ "am" whose subject is not "I" (its only subject in English): the words were not
    English as the parse read them ("Tierarztpraxis am See, doing reception"), and what
    it made of them, or of a participle sharing that subject, is no fact."""
    head = parsed.words[clause.head]
    verbs = [head, *parsed.kids(head.i, "aux", "auxpass")]
    if clause.parent is not None and participle(parsed, clause):
        parent = parsed.words[clause.parent]
        verbs += [parent, *parsed.kids(parent.i, "aux", "auxpass")]
    subjects = [s for v in verbs for s in parsed.kids(v.i, *SUBJECTS)]
    return any(v.lower == "am" for v in verbs) and any(s.lower != "i" for s in subjects)


def _aside(parsed: Parsed, clause: Clause, parent: Word) -> bool:
    """A statement made first, then a remark on it by or to someone other than the
    speaker ("theo got a job at stripe, he won't say it himself", "…, don't tell anyone"):
    the remark's negation does not take the statement back, as "I don't think" before it
    (or "…, I don't know" after it) does."""
    if clause.head > parent.i:
        return False
    subjects = parsed.kids(parent.i, *SUBJECTS)
    return not any(s.lower in _SPEAKER_WORDS for s in subjects)


def _of_another(parsed: Parsed, clause: Clause, speech: Speech) -> bool:
    """A participle sharing its main clause's subject after a person that clause acts on
    ("I saw Tom, looking tired", "bumped into priya, dragging a case"): it may tell of
    that person, not of the subject."""
    if not participle(parsed, clause) or clause.parent is None:
        return False
    main = parsed.words[clause.parent]
    acted_on = parsed.kids(main.i, "dobj", "dative")
    acted_on += [o for p in parsed.kids(main.i, "prep") for o in parsed.kids(p.i, "pobj")]
    for word in acted_on:
        if is_pronoun(word) and word.lower not in ("it", "this", "that"):
            return True
        if word.pos in ("PROPN", "NOUN") and named(parsed, word, speech) is not None:
            return True
    return False


def _finite(parsed: Parsed, clause: Clause) -> bool:
    """A clause with a tensed verb: not "Deborah exploring nature", "Caroline to explore";
    a participle sharing its main clause's subject is given one (:func:`voice`)."""
    if participle(parsed, clause):
        return True
    head = parsed.words[clause.head]
    verbs = [head, *(a for a in parsed.kids(head.i, "aux", "auxpass") if a.i in clause.words)]
    return any(v.tag in _FINITE for v in verbs)


def _opens_with_subject(parsed: Parsed, clause: Clause) -> bool:
    """Nothing but a phrase of time or place before the subject: no hedge ("maybe",
    "glad"), no question word ("what", "how much"), no condition ("if Andrew wants,")."""
    if clause.subject is None:
        return True
    first = parsed.words[clause.subject].left
    before = [parsed.words[i] for i in clause.words if i < first]
    in_phrase = {j for w in before if w.dep in ("prep", "npadvmod") for j in parsed.subtree(w.i)}
    for word in before:
        if word.lower in _HEDGES or word.tag in _WH or word.dep == "mark":
            return False
        if word.pos in ("ADJ", "VERB") and word.i not in in_phrase:
            return False
    return True


def _about(parsed: Parsed, clause: Clause, speech: Speech) -> tuple[Referent, Word | None] | None:
    """Whom the clause is about, and the noun of a "my <noun> …" subject."""
    if clause.subject is None:
        return None
    word = parsed.words[clause.subject]
    # "theo and I": the parser makes "I" the conjunct, or a second subject of the verb
    joined = [word, *parsed.kids(word.i, "conj"), *parsed.kids(clause.head, "nsubj")]
    if any(w.lower in FIRST and w.pos == "PRON" for w in joined):
        return speech.me, None
    owned = _owned_complement(parsed, clause, speech)
    if owned is not None:
        return owned  # "radiohead is my favourite band"
    head = parsed.words[clause.head]
    if head.lemma == "call" and any(k.lower == "me" for k in parsed.kids(head.i)):
        return speech.me, None  # "everyone calls me Lexi"
    if is_pronoun(word):
        found = pronoun(word, speech) or they(parsed, word, speech)
        return (found, None) if found is not None else None
    person = named(parsed, word, speech)
    if person is not None:
        return person, None
    if word.pos == "PROPN" and parsed.entity(word.i) and acted_on(parsed, clause):
        return speech.me, None  # "Amazon cut my OT": what befell the speaker
    owners = parsed.kids(word.i, "poss")
    if owners and word.pos == "NOUN":
        owner = pronoun(owners[0], speech) if is_pronoun(owners[0]) else None
        owner = owner or named(parsed, owners[0], speech)
        if owner is not None and owner.kind in ("self", "member", "relation"):
            return owner, word  # "my mom's birthday is…": the relation's
    return None


def _owned_complement(
    parsed: Parsed, clause: Clause, speech: Speech
) -> tuple[Referent, Word] | None:
    """A "my <noun>" complement of "be": the clause is about its owner."""
    for comp in parsed.kids(clause.head, "attr"):
        owners = parsed.kids(comp.i, "poss")
        if comp.pos == "NOUN" and owners and owners[0].lower in ("my", "our"):
            return speech.me, comp
    return None


def _statement_words(parsed: Parsed, clause: Clause, dates: Sequence[ResolvedDate]) -> list[int]:
    """The clause's words, with its subject when it shares one, and without a lead-in set
    off by a comma that is no date or phrase of place ("edinburgh trip, same deal, I…",
    "for the lunch order, I…") or that is a phrase of its own ("first week back tmrw I…")."""
    words = set(clause.words)
    if clause.subject is None:
        return sorted(words)
    if clause.shared_subject:
        described = set(parsed.subtree(clause.subject))
        if clause.link == "relcl":  # the person without what the clause says of them
            described -= {*parsed.subtree(clause.head), *_punctuation(parsed, described)}
        words |= described
    start = parsed.words[clause.subject].left
    ends = [i for i in words if i < start and parsed.words[i].text in _ENDS]
    if ends:  # "Meh. dana is making me…", "For the group: I hurt…": said before, apart
        words = {i for i in words if i > max(ends)}
    lead = [parsed.words[i] for i in sorted(words) if i < start and parsed.words[i].pos != "PUNCT"]
    dated = [w for w in lead if any(d.span[0] <= w.start < d.span[1] for d in dates)]
    commas = any(parsed.words[i].text == "," for i in words if i < start)
    aside = lead and (lead[0].dep != "prep" or lead[0].lower in _ASIDE_PREPOSITIONS)
    if aside and commas and len(dated) < len(lead):  # "for the lunch order, I'm vegetarian"
        words -= set(range(lead[0].i, start))
    elif any(w.dep == "npadvmod" and w.pos == "NOUN" and w not in dated for w in lead):
        words -= set(range(lead[0].i, start))  # "first week back tmrw i teach chem…"
    words -= {w.i for w in map(parsed.words.__getitem__, words) if _intensifier(parsed, w)}
    first = parsed.words[min(words)]
    if first.lower == "now" and first.dep == "advmod" and first.i < start:
        words.discard(first.i)  # "Now I'm passionate about…": a fact holds now anyway
    for i in [i for i in words if _remark_on_it(parsed, parsed.words[i])]:
        words -= {*parsed.subtree(i), parsed.words[i].left - 1}
    cut = _so_then(parsed, clause, words)
    if cut is not None:
        words = {i for i in words if i < cut}  # "allergic to peanuts so ideally somewhere…"
    after = [i for i in words if i > clause.head and parsed.words[i].text in _ENDS]
    after += [  # "…, pls no chicken wraps for me": a request or an aside after a comma
        i
        for i in words
        if i > clause.head
        and parsed.words[i].text == ","
        and i + 1 < len(parsed.words)
        and parsed.words[i + 1].tag == "UH"
    ]
    if after:  # "…at 5pm. classic.": what follows the clause's end is said apart
        words = {i for i in words if i < min(after)}
    gaps = [i for i in words if i > clause.head and i - 1 not in words]
    if gaps and all(parsed.words[i].dep == "punct" for i in words if i >= max(gaps)):
        words = {i for i in words if i < max(gaps)}  # "…5 days ago and my body… 8am": "am"
    said = [i for i in sorted(words) if parsed.words[i].text not in (".", "!", "?")]
    tail = [parsed.words[i] for i in said[-2:]]
    if len(said) > 2 and tail[0].text == "," and tail[1].lower in _TAIL_WORDS:
        words -= set(said[-2:])  # "…on saturday, sorry", "…to berlin, yay"
    return _closing_quote(parsed, sorted(words - _loose_tail(parsed, clause, said)))


def _loose_tail(parsed: Parsed, clause: Clause, said: list[int]) -> set[int]:
    """A remark set after the clause by its last comma that names nothing and tells no
    action: "…shellfish, like properly", "…the logbook, all good", "…, ugh"."""
    commas = [n for n, i in enumerate(said) if parsed.words[i].text == ","]
    if not commas or commas[-1] <= 1:
        return set()
    tail = [parsed.words[i] for i in said[commas[-1] + 1 :]]
    if not tail or len(tail) > 3 or any(w.i <= clause.head for w in tail):
        return set()
    if any(w.pos in ("NOUN", "PROPN", "NUM", "VERB", "PRON") for w in tail):
        return set()
    return {said[commas[-1]], *(w.i for w in tail)}


def _punctuation(parsed: Parsed, words: set[int]) -> set[int]:
    return {i for i in words if parsed.words[i].pos == "PUNCT"}


_SO_DEGREE = words("much many far well long little few that")


def _so_then(parsed: Parsed, clause: Clause, words: set[int]) -> int | None:
    """Where a "so" that means "and therefore" starts, after a clause said in full ("I'm
    allergic to peanuts so ideally somewhere…"): the parse hangs what follows on the
    clause; not the "so" of degree ("so happy", "so much")."""
    for i in sorted(words):
        word = parsed.words[i]
        if word.lower != "so" or word.dep != "advmod" or i <= clause.head:
            continue
        after = parsed.words[i + 1].lower if i + 1 < len(parsed.words) else ""
        if parsed.words[i - 1].pos in ("NOUN", "PROPN", "PRON") and after not in _SO_DEGREE:
            return i
    return None


def _intensifier(parsed: Parsed, word: Word) -> bool:
    """An adverb that only stresses ("even went on a hike", "definitely carrying on"), "just"
    of a verb done or under way ("just signed up", "is just learning"), not "just" as
    "only" ("I just eat fish"), and a reflexive that only stresses ("… myself")."""
    if word.lower in _EMPHATIC and word.dep not in CORE and not parsed.children[word.i]:
        return True  # "trying to do more yoga myself"; not "I hurt myself"
    if word.dep != "advmod" or parsed.children[word.i]:
        return False
    if word.lower == "just":
        verb = parsed.words[word.head]
        return verb.tag in ("VBD", "VBN", "VBG") or bool(parsed.kids(verb.i, "aux"))
    return word.lower in _INTENSIFIERS


def _remark_on_it(parsed: Parsed, word: Word) -> bool:
    """A relative clause after a comma that judges what was said rather than adding to it:
    ", which is pretty exciting", ", which has been great for my headspace"."""
    if word.dep != "relcl" or word.lemma != "be" or not parsed.kids(word.i, "acomp"):
        return False
    which = parsed.kids(word.i, "nsubj")
    before = parsed.words[word.left - 1] if word.left > 0 else None
    return bool(which) and which[0].lower == "which" and before is not None and before.text == ","


def _closing_quote(parsed: Parsed, words: list[int]) -> list[int]:
    """The words, with the closing quotation mark of a quotation they open (the parse hangs
    it on the sentence's root: "a fan of Ed Sheeran's "Perfect""), so no value is cut."""
    marks = [i for i in words if parsed.words[i].text in _QUOTES]
    if not words or len(marks) % 2 == 0:
        return words
    after = words[-1] + 1
    if after < len(parsed.words) and parsed.words[after].text in _QUOTES:
        return [*words, after]
    return words


def voice(
    parsed: Parsed, clause: Clause, words: Sequence[int], speech: Speech
) -> dict[int, str] | None:
    """How each word of the statement is written: names for pronouns, agreeing verbs.
    None when a word points at nobody ("them", "that", "you" to the assistant)."""
    replace: dict[int, str] = {}
    for i in words:
        word = parsed.words[i]
        if is_pronoun(word):
            group = they(parsed, word, speech)
            if group is None and (
                points_nowhere(parsed, word) or _elliptical(word) or _counted_among(parsed, word)
            ):
                return None
            found = pronoun(word, speech) or group
            if found is None:
                if word.lower in FIRST | _PRONOUN_SUBJECTS or word.dep in CORE | {"poss"}:
                    return None
                continue
            replace[i] = written(word, found)
            if word.dep in SUBJECTS and word.lower in _PRONOUN_SUBJECTS:
                _agree(parsed, word.head, words, replace)
            elif word.dep in SUBJECTS:
                _clitic_after(parsed, word, replace)  # "she's" → "Lena's sister is"
            if _we_all(parsed, word):  # "we all" → "Maya Chen"
                replace[i + 1] = ""
        elif _bare_kin(parsed, word):
            replace[i] = f"{speech.me.possessive} {word.lower}"  # "dad had surgery"
        elif word.lower == "the" and the_kin(parsed, parsed.words[word.head], speech):
            replace[i] = speech.me.possessive  # "the kids" → "Maya Chen's kids"
        elif word.text.islower() and _relatives_name(parsed, word, speech):
            replace[i] = as_name(word.text)  # "my sister lena" → "… sister Lena"
        elif word.lower in SPOKEN_FORMS and (word.lower != "nt" or word.dep == "neg"):
            replace[i] = SPOKEN_FORMS[word.lower]
        elif word.pos in ("PROPN", "NOUN") and word.dep != "compound":
            _member_name(parsed, word, words, speech, replace)
    subject = parsed.words[clause.subject] if clause.subject is not None else None
    if subject is not None and participle(parsed, clause):
        be = _be(parsed, clause, subject, replace.get(subject.i))
        replace[clause.head] = f"{be} {parsed.words[clause.head].text}"
    elif clause.shared_subject and subject is not None and subject.lower in _PRONOUN_SUBJECTS:
        _agree(parsed, clause.head, words, replace)
    if subject is not None and not clause.question:
        _unstressed(parsed, parsed.words[clause.head], subject, replace)
    return replace


def _relatives_name(parsed: Parsed, word: Word, speech: Speech) -> bool:
    """The given name of a relation of the session ("tom" of "my brother tom", "priya" of
    "my manager will be priya")."""
    known = word.pos in ("PROPN", "NOUN") and word.lower in speech.heard.roles
    return known or kin_name(parsed, word) or given_name(parsed, word)


def _clitic_after(parsed: Parsed, subject: Word, replace: dict[int, str]) -> None:
    """The clitic verb after a pronoun written as a name, written out: "she's allergic" →
    "… is allergic", "they're" → "… are", "she's been" → "… has been"."""
    at = subject.i + 1
    if at >= len(parsed.words) or not parsed.words[at].text.startswith(("'", "’")):
        return
    after = parsed.words[at + 1] if at + 1 < len(parsed.words) else None
    form = written_out(parsed.words[at], after)
    if form is not None:
        replace[at] = form


def _unstressed(parsed: Parsed, verb: Word, subject: Word, replace: dict[int, str]) -> None:
    """The "do" that only stresses left out, its verb agreeing: "we do enjoy watching
    birds" → "Maya Chen enjoys watching birds", "Andrew does love Toby" → "Andrew loves
    Toby"."""
    stress = [a for a in parsed.kids(verb.i, "aux") if a.lower in ("do", "does") and a.i < verb.i]
    if not stress or verb.tag != "VB" or parsed.kids(verb.i, "neg"):
        return
    replace[stress[0].i] = ""
    singular = stress[0].lower == "does" or subject.lower in _PRONOUN_SUBJECTS
    replace[verb.i] = third_person(verb.lower) if singular else verb.text


def _be(parsed: Parsed, clause: Clause, subject: Word, written_as: str | None) -> str:
    """The "be" a participle sharing its main clause's subject takes: "borrowing" after
    "I'll drive" → "is borrowing", after "I drove" → "was borrowing"."""
    main = parsed.words[clause.parent if clause.parent is not None else clause.head]
    tags = {w.tag for w in (main, *parsed.kids(main.i, "aux", "auxpass"))}
    past = "VBD" in tags and "MD" not in tags
    if written_as is not None:  # a pronoun, written as the name(s) it means
        plural = " and " in written_as
    else:
        plural = subject.tag in ("NNS", "NNPS") or bool(parsed.kids(subject.i, "conj"))
    return ("were" if plural else "was") if past else ("are" if plural else "is")


def _bare_kin(parsed: Parsed, word: Word) -> bool:
    """Kin named without "my" ("dad had the surgery"): the speaker's."""
    if word.lower not in FAMILY or word.dep not in CORE or word.pos not in ("NOUN", "PROPN"):
        return False
    return not parsed.kids(word.i, "poss", "det")


def _elliptical(word: Word) -> bool:
    """A possessive standing for a thing left unsaid: "mine was in Turin" (my what?)."""
    return word.lower in ("mine", "yours", "ours", "hers") and word.dep in CORE


def _counted_among(parsed: Parsed, word: Word) -> bool:
    """ "us" counted ("3 of us", "all of us", "none of us"): a group the speaker is one of,
    which no one name stands for."""
    if word.lower != "us" or word.dep != "pobj":
        return False
    of = parsed.words[word.head]
    if of.lower != "of" or of.head == of.i:
        return False
    counted = parsed.words[of.head]
    return counted.pos == "NUM" or counted.lower in _QUANTIFIERS


_QUANTIFIERS = frozenset(
    ("all", "both", "each", "some", "most", "none", "many", "few", "several", "any", "either",
     "neither", "one", "half", "rest", "lot", "lots", "couple", "bunch", "group", "majority")
)  # fmt: skip


def _we_all(parsed: Parsed, word: Word) -> bool:
    following = parsed.words[word.i + 1].lower if word.i + 1 < len(parsed.words) else ""
    return word.lower in ("we", "us") and following in ("all", "both")


def _agree(parsed: Parsed, verb: int, words: Sequence[int], replace: dict[int, str]) -> None:
    """Make the finite verb of ``verb`` agree with a third-person singular subject; not
    when it has others ("my partner and I play", which the parser reads as two subjects)."""
    subjects = parsed.kids(verb, *SUBJECTS)
    if len(subjects) > 1 or any(parsed.kids(s.i, "conj") for s in subjects):
        return
    auxes = [a for a in parsed.kids(verb, "aux", "auxpass") if a.i < verb and a.tag != "TO"]
    finite = auxes[0] if auxes else parsed.words[verb]
    head = parsed.words[finite.head]
    if finite.tag == "VB" and finite.dep == "ccomp" and head.lemma in BARE_INFINITIVE_AFTER:
        return  # "help you move", "let me know": a bare infinitive, no finite verb
    if finite.i in words:
        form = agreeing(finite)
        if form is not None:
            replace[finite.i] = form


def _member_name(
    parsed: Parsed, word: Word, words: Sequence[int], speech: Speech, replace: dict[int, str]
) -> None:
    """A member named by first name ("tom") is written with their display name."""
    person = speech.cast.find(word.text)
    if person is None or person.name.lower() == word.lower:
        return
    if word.pos == "NOUN" and word.dep not in CORE:
        return
    for j in range(word.left, word.i):
        if j in words and parsed.words[j].dep == "compound" and parsed.words[j].pos == "PROPN":
            return  # written with more than the first name: leave it
    replace[word.i] = person.name


def _value(
    parsed: Parsed,
    clause: Clause,
    reading: Reading,
    words: Sequence[int],
    replace: dict[int, str],
    dates: Sequence[ResolvedDate],
) -> str:
    """The value's phrase: the named word's subtree within the clause, whole; for an
    action, the predicate and what follows it ("tried sushi for the first time")."""
    if reading.value is None:
        chosen = [i for i in words if i >= clause.head]
    else:
        chosen = [i for i in parsed.subtree(reading.value) if i in words]
        chosen += _number_after(parsed, clause, reading.value, words)
    chosen = [i for i in chosen if not _polarity_word(parsed, parsed.words[i], clause.head)]
    text = strip_article(render(parsed, chosen, replace, dates)).strip(" ,;:!?")
    return text[3:] if text.startswith("to ") else text


def _number_after(parsed: Parsed, clause: Clause, value: int, words: Sequence[int]) -> list[int]:
    """A bare number right after the value's phrase that the parse hung on the verb
    instead: it is part of the name ("a tesla model 3", "a pixel 8")."""
    after = parsed.subtree(value).stop
    if after not in words:
        return []
    number = parsed.words[after]
    hung = number.head == value or (number.dep == "npadvmod" and number.head == clause.head)
    return [after] if number.tag == "CD" and hung and not parsed.kids(after) else []


def _polarity_word(parsed: Parsed, word: Word, head: int) -> bool:
    """A word the polarity already says, or the head's auxiliary: not part of a value."""
    if word.dep in ("aux", "auxpass") and word.head == head and word.tag != "TO":
        return True
    if word.dep == "neg" or (word.lower in ("anymore", "longer") and word.dep == "advmod"):
        return True
    return word.lower == "no" and any(k.lower == "longer" for k in parsed.kids(word.head))


def _persons(
    parsed: Parsed, words: Sequence[int], about: Referent, speech: Speech
) -> tuple[str, ...]:
    found = [about.short] if about.kind != "self" else []
    for i in words:
        word = parsed.words[i]
        if word.pos in ("PROPN", "NOUN") and word.dep in CORE:
            other = named(parsed, word, speech)
            if other is not None and other.kind in ("member", "relation"):
                found.append(other.short)
    return tuple(dict.fromkeys(found))


def _new_relation(parsed: Parsed, word: Word, speech: Speech) -> Referent | None:
    """A relation the speaker has just got ("got a new puppy", "I have a brother"): the
    "he" or "she" that follows can mean it."""
    verb = parsed.words[word.head]
    if word.dep != "dobj" or verb.lemma not in GETTING or word.lemma not in ROLES:
        return None
    if not any(k.lower in ("a", "an", "another") for k in parsed.kids(word.i, "det")):
        return None
    subject = parsed.kids(verb.i, *SUBJECTS)
    if subject and not (subject[0].lower in FIRST and subject[0].pos == "PRON"):
        return None
    me = speech.me
    return Referent(
        "relation", f"{me.possessive} {word.lower}", me.person, role(word), None, word.lower
    )


def _note(parsed: Parsed, clause: Clause, speech: Speech) -> None:
    """Remember the people the clause names, for a later "he" or "her"."""
    for i in clause.words:
        word = parsed.words[i]
        beside = word.dep == "appos" and parsed.words[word.head].pos == "PROPN"
        if word.pos not in ("PROPN", "NOUN") or (word.dep not in CORE | {"poss"} and not beside):
            continue  # a person named as subject or object, or beside a name ("Toby, my dog")
        found = named(parsed, word, speech) or _new_relation(parsed, word, speech)
        if found is None or found.kind == "self":
            continue
        if found.kind == "outsider" and word.dep not in (*SUBJECTS, "dobj", "dative"):
            continue
        speech.note(found, plural=word.tag in ("NNS", "NNPS"))
