"""User facts: every user sentence parsed, each clause read as an atom, filed under the
person it is about.

The users' sentences of a session (questions aside) are parsed in one batch
(:mod:`.analysis`). Each clause that states something about a person becomes one fact
(:mod:`.atoms`):

* about the speaker → the speaker's fact;
* about another member of the session, named by display name or first name (or "you" to
  a human member) → that member's fact, with ``fields["said_by"]`` the speaker's id and a
  confidence of at most 0.7, below what people say of themselves, so that what the
  subject says of themselves ranks above a friend's claim made at the same time, and a
  later correction by the subject supersedes it;
* about someone outside the session (a relation such as "my sister Lena", or a named
  person) → a ``relationship`` fact of the speaker, keyed by the relation and what is
  said of it (``relationship:sister:lena:city``).

A relation named in passing with a name ("an update for my manager greg") is a
relationship fact of its own: "Noor Haddad's manager is Greg" (``relationship:manager``).

A clause with a date phrase that reads as an experience is an event, keyed by its date
(``event:<iso date>:<topic>``) and valid from that date when it is past.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time
from difflib import SequenceMatcher
from typing import Any

from observations.extract.analysis import Parsed, Word, analyse, with_entities
from observations.extract.atoms import Atom, sentence_atoms
from observations.extract.base import PROFILE_KINDS, Extracted, KnownName
from observations.extract.corrections import (
    Correction,
    answered,
    corrected,
    correction,
    corrects,
)
from observations.extract.dates import DATE_FIELDS, ResolvedDate, find_dates, yearly_dates
from observations.extract.ellipsis import (
    dated_noun,
    introduced,
    it_dated,
    labelled,
    restored,
    unpossessed,
)
from observations.extract.passing import Passing, passing_facts
from observations.extract.people import Cast, Person
from observations.extract.references import Heard, Referent, Speech
from observations.extract.text import CONFIRM_TAG, singular
from observations.extract.turns import Sentence, Turn
from observations.extract.values import Value, bare_value, revalued
from observations.extract.vocabulary import ROLES, UNIQUE_ROLES, words

THIRD_PARTY_CONFIDENCE = 0.7
# what a relation found by a pronoun or a bare name takes off (``Atom.resolved``)
RESOLVED_CONFIDENCE = 0.05
DATED_CONFIDENCE = 0.1  # what a date adds to an experience: the event it makes is specific
_CONFIRM_TAG = re.compile(CONFIRM_TAG, re.IGNORECASE)
_RIGHT_AFTER_DENIAL = re.compile(
    r"(?i)(?:\bnot|n['’]t|\b(?:do|does|did|is|was|are|were|ca|wo|have|has)nt)\b[^.!?;]*?"
    r"(?P<tail>,\s*(?:it'?s|it is|it was)\s+(?P<right>[\w'-]+(?:\s+[\w'-]+){0,3}?))"
    r"\s*(?=[.!?;]|$)"
)
_NOUN_MODIFIERS = ("compound", "amod", "det", "poss", "nummod")
QUESTION_STARTS = words(
    """what how why where when who which do does did is are can could would will have has
    should any anything was"""
)
IMPORTANCE = {
    "identity": 0.8,
    "constraint": 0.8,
    "relationship": 0.7,
    "goal": 0.7,
    "event": 0.65,
    "skill": 0.6,
    "preference": 0.6,
    "experience": 0.5,
}


@dataclass(frozen=True, slots=True)
class _Said:
    """A user's sentence as read: its turn, the speech it is in, the facts its clauses gave."""

    turn: Turn
    sentence: Sentence
    speech: Speech
    facts: list[FactHit]


@dataclass(frozen=True, slots=True)
class FactHit:
    """A fact and the sentence it came from (so uncovered sentences can go episodic)."""

    event_id: int
    sentence_index: int
    item: Extracted


def extract_facts(turns: tuple[Turn, ...], known: Sequence[KnownName] = ()) -> list[FactHit]:
    """Every fact in the users' turns, in session order; ``known``, the relations the
    channel's earlier sessions named by their given name ("rosa" for a member's wife)."""
    cast = Cast(t.event for t in turns)
    pending = [(t, s) for t in turns if t.event.role == "user" for s in t.sentences]
    pending = [(t, s) for t, s in pending if not _only_a_question(s)]
    parsed = _with_subjects(analyse([s.text for _, s in pending]), [s for _, s in pending])
    parsed = _with_names_typed(parsed, cast)
    heard = Heard(earlier={k.given: (k.owner_id, k.role) for k in known})
    speeches: dict[int, Speech] = {}
    hits: list[FactHit] = []
    asked: list[FactHit] = []  # statements asked to be confirmed: no facts, unless answered
    said_in: dict[tuple[int, int], _Said] = {}  # each sentence read, and its clauses' facts
    for (turn, sentence), (view, dates) in zip(pending, parsed, strict=True):
        speech = speeches.get(turn.event.id)
        if speech is None:
            speech = speeches[turn.event.id] = _speech(cast, turn, heard)
        related = len(speech.relations)
        answer = correction(view, opening=sentence.index == 0)
        if answer is not None:
            recent = _recent(turns, turn)
            if not _put_right(hits, turn, sentence, answer, recent) and answer.wrong:
                _restate_own(hits, said_in, turn, answer, recent)
        reply = answered(view)
        if reply is not None:
            _put_right(asked, turn, sentence, reply, _recent(turns, turn), hits)
        value = bare_value(view)
        if value is not None:
            _revalue(hits, turn, value, _recent(turns, turn))
        into = asked if checked(sentence) is not None else hits
        atoms = sentence_atoms(view, dates, speech)
        right = righted(sentence)
        if right is not None:
            atoms += _put_right_in_place(view, speech, atoms, right[1])
        read = [FactHit(turn.event.id, sentence.index, fact(turn, sentence, a)) for a in atoms]
        into.extend(read)
        said_in[(turn.event.id, sentence.index)] = _Said(turn, sentence, speech, read)
        for relation in speech.relations[related:]:
            hits.append(FactHit(turn.event.id, sentence.index, relation_fact(turn, relation)))
        for said in passing_facts(view, speech):
            hits.append(FactHit(turn.event.id, sentence.index, passing_fact(turn, said)))
    return [_yearly(hit) for hit in hits]


def _revalue(hits: list[FactHit], turn: Turn, value: Value, recent: set[int]) -> None:
    """ "my rent is 740 a month" … "wait no sorry its 790 now": a bare value said by the
    speaker just after one of their facts whose value has the same type (:mod:`.values`)
    is that fact's value put right; the fact keeps its words, with the new value, and rests
    on both turns."""
    speaker = turn.event.actor_id
    for n in range(len(hits) - 1, -1, -1):
        item = hits[n].item
        if hits[n].event_id not in recent | {turn.event.id} or item.owner_id != speaker:
            continue
        kind = item.fields.get("value_type")
        if kind not in ("money", "dose") or value.type not in (kind, "number"):
            continue
        if "said_by" in item.fields:
            continue
        old = str(item.fields.get("object", ""))
        if not old or old not in item.statement:
            return
        right = revalued(old, value)
        statement = item.statement.replace(old, right, 1)
        fields = {**item.fields, "object": right}
        events = tuple(sorted({*item.source_event_ids, turn.event.id}))
        put_right = replace(item, statement=statement, fields=fields, source_event_ids=events,
                            valid_from=turn.event.occurred_at)  # fmt: skip
        hits[n] = replace(hits[n], item=put_right)
        return


_YEARLY = ("birthday", "anniversary")  # topics whose day comes back every year


def _yearly(hit: FactHit) -> FactHit:
    """A birthday or an anniversary with its day written without a year (and without the
    date fields of one year's day)."""
    item = hit.item
    if not item.key.endswith(_YEARLY):
        return hit
    statement = yearly_dates(item.statement, item.valid_from)
    fields = {k: v for k, v in item.fields.items() if k not in DATE_FIELDS}
    return replace(hit, item=replace(item, statement=statement, fields=fields))


_REPLY_REACH = 3  # how many turns back a bare correction ("2nd dan actually") may answer


def _recent(turns: tuple[Turn, ...], turn: Turn) -> set[int]:
    """The events of the turns just before ``turn``, which a bare correction answers."""
    at = next(n for n, t in enumerate(turns) if t.event.id == turn.event.id)
    return {t.event.id for t in turns[max(0, at - _REPLY_REACH) : at]}


def _put_right(
    hits: list[FactHit],
    turn: Turn,
    sentence: Sentence,
    said: Correction,
    recent: set[int],
    into: list[FactHit] | None = None,
) -> bool:
    """ "its dogs not cats", from the member a friend's claim is about: the latest such
    claim whose value it names is replaced by the member's corrected fact
    (:mod:`.corrections`); "2nd dan actually" puts right the latest claim about the member
    if it was made in the turns just before, and "it's the 13th" answers the latest claim
    about the member asked to be confirmed there (from ``hits``, the claims asked, the
    answer going ``into`` the facts). Whether a claim was put right."""
    into = hits if into is None else into
    member = turn.event.actor_id
    for n in range(len(hits) - 1, -1, -1):
        claim = hits[n].item
        by = claim.fields.get("said_by")
        if claim.owner_id != member or by in (None, member) or hits[n].event_id == turn.event.id:
            continue
        if not said.wrong and hits[n].event_id not in recent:
            return False
        if corrects(claim, said):
            right = corrected(claim, said, turn.event.id, turn.event.occurred_at)
            if right is not None:
                del hits[n]
                into.append(FactHit(turn.event.id, sentence.index, right))
            return right is not None
        if not said.wrong:
            return False  # a bare correction answers the latest claim or none
    return False


def _restate_own(
    hits: list[FactHit],
    said_in: dict[tuple[int, int], _Said],
    turn: Turn,
    said: Correction,
    recent: set[int],
) -> None:
    """ "booked the dentist for next monday", then "wait actually it's tuesday not
    monday": the speaker puts right what they said themself just before. Their latest
    sentence (in the turns just before, or earlier in this turn) whose words name Y and
    that gave facts is read again with X for Y — its dates resolved anew from when it was
    said — and its facts are replaced by the ones read, from both turns."""
    wrong = _leading_run(said.wrong)
    if not wrong:
        return
    pattern = re.compile(rf"(?i)\b{re.escape(wrong)}\b")
    member = turn.event.actor_id
    for hit in reversed(hits):
        place = (hit.event_id, hit.sentence_index)
        if hit.event_id not in recent | {turn.event.id} or place not in said_in:
            continue
        before = said_in[place]
        sentence = before.sentence
        if before.turn.event.actor_id != member or not pattern.search(sentence.text):
            continue
        text = pattern.sub(said.text, sentence.text, count=1)
        again = replace(sentence, text=text, dates=find_dates(text, before.turn.event.occurred_at))
        ((view, found),) = _with_subjects(analyse([text]), [again])
        hits[:] = [h for h in hits if not any(h is old for old in before.facts)]
        for atom in sentence_atoms(view, found, before.speech):
            item = fact(before.turn, again, atom)
            item = replace(item, source_event_ids=(*item.source_event_ids, turn.event.id))
            hits.append(FactHit(before.turn.event.id, sentence.index, item))
        return


def _leading_run(words: tuple[Word, ...]) -> str:
    """The words right after "not" up to the first gap (a comma, left out of them):
    "monday" of "not monday, i misread the email"."""
    run = [w for n, w in enumerate(words) if w.i - words[0].i == n]
    return "".join(w.text + (" " if w.space else "") for w in run).strip()


def _only_a_question(sentence: Sentence) -> bool:
    """A question from its first word on ("what did you…?", "can you…?"): nothing in it
    to parse for facts; "i make 85k, can i afford it?" is parsed, its first clause a fact.
    A question that names a group of someone's relations ("how are your dogs?") is parsed
    all the same: the answer's "they" means them."""
    first = sentence.text.split(maxsplit=1)[0].lower() if sentence.text.split() else ""
    return sentence.question and first in QUESTION_STARTS and not _names_a_group(sentence.text)


_OWNED = re.compile(r"(?i)\b(?:my|your|our)\s+(\w+)(?:\s+(\w+))?")  # the next two words


def _names_a_group(text: str) -> bool:
    """ "your dogs", "my two kids", "our children": an owned plural of a relation's role."""
    words = [w.lower() for pair in _OWNED.findall(text) for w in pair if w]
    return any(w == "children" or (singular(w) != w and singular(w) in ROLES) for w in words)


def _with_names_typed(
    parsed: list[tuple[Parsed, tuple[ResolvedDate, ...]]], cast: Cast
) -> list[tuple[Parsed, tuple[ResolvedDate, ...]]]:
    """The parses that name someone by a proper noun who is no member of the session,
    with their entity types read: such a name is no person when the NER types it a place
    or the like, or leaves it untyped at the start of a sentence ("Sheffield has better
    crags", "Gym moved my assessment": no one's facts)."""
    need = [
        n
        for n, (view, _) in enumerate(parsed)
        if any(w.pos == "PROPN" and cast.find(w.text) is None for w in view.words)
    ]
    typed = with_entities([parsed[n][0] for n in need])
    found = list(parsed)
    for n, view in zip(need, typed, strict=True):
        found[n] = (view, found[n][1])
    return found


def _with_subjects(
    views: list[Parsed], sentences: list[Sentence]
) -> list[tuple[Parsed, tuple[ResolvedDate, ...]]]:
    """Each sentence's parse and dates; a sentence that left out its first-person subject
    ("Went to the park yesterday") is parsed again with it (:mod:`.ellipsis`), its dates
    moved along; a statement asked to be confirmed ("her bday is june 3rd right?") is
    parsed again without its tag (:func:`checked`); one whose "'s" was read as a
    possessive ("cleo's allergic to peanuts") is parsed again with "is" for it; one
    that opens with a label and a colon ("rehearsal news: …") without the label; a thing
    and its day with no verb ("dentist on the 20th at 9") as the speaker's thing on that
    day; "I'm Sam, a nurse at …" as what the speaker is; "it's" before a day as the thing
    said last ("booked my driving test!! its in 3 weeks")."""
    found = [(view, s.dates) for view, s in zip(views, sentences, strict=True)]
    fixed = {n: text for n, (view, _) in enumerate(found) if (text := restored(view))}
    fixed |= {n: text for n, s in enumerate(sentences) if n not in fixed and (text := checked(s))}
    fixed |= {
        n: text
        for n, (view, _) in enumerate(found)
        if n not in fixed and (text := unpossessed(view))
    }
    fixed |= {
        n: right[0] for n, s in enumerate(sentences) if n not in fixed and (right := righted(s))
    }
    fixed |= {
        n: text
        for n, (view, dates) in enumerate(found)
        if n not in fixed
        and (text := labelled(view) or dated_noun(view, dates) or introduced(view))
    }
    fixed |= {
        n: text
        for n, (view, dates) in enumerate(found)
        if n not in fixed and (text := it_dated(view, dates, _before(views, sentences, n)))
    }
    for n, view in zip(fixed, analyse(list(fixed.values())), strict=True):
        found[n] = (view, _moved(found[n][1], sentences[n].text, view.text))
    return found


def _before(views: list[Parsed], sentences: list[Sentence], n: int) -> Parsed | None:
    """The parse of the sentence said just before sentence ``n`` in the same message."""
    if n == 0 or sentences[n].index == 0:
        return None
    same = sentences[n - 1].speaker == sentences[n].speaker
    return views[n - 1] if same and sentences[n - 1].index < sentences[n].index else None


def _moved(dates: tuple[ResolvedDate, ...], before: str, after: str) -> tuple[ResolvedDate, ...]:
    """The dates of a sentence written again where they now are ("Went…" → "I went…",
    "'s" → " is", a subject put back in each of its sentences): each end of a date phrase
    moves with the unchanged text around it."""
    blocks = SequenceMatcher(None, before, after, autojunk=False).get_matching_blocks()

    def at(k: int) -> int:  # in a changed stretch: where the unchanged text after it starts
        block = next((b for b in blocks if k < b.a + b.size), blocks[-1])
        return block.b + max(0, k - block.a)

    return tuple(replace(d, span=(at(d.span[0]), at(d.span[1] - 1) + 1)) for d in dates)


def checked(sentence: Sentence) -> str | None:
    """A statement with a tag asking to confirm it ("her bday is june 3rd right?",
    "…, yeah?"), without its tag; None for any other sentence."""
    tag = _CONFIRM_TAG.search(sentence.text)
    return sentence.text[: tag.start()] if tag and tag.start() > 0 else None


def righted(sentence: Sentence) -> tuple[str, str] | None:
    """ "I'm not allergic to shellfish, it's peanuts": a denial, then what is right in
    its place after a comma (the mirror of "it's peanuts, not shellfish",
    :mod:`.corrections`), as the sentence without the tail and the right words; None for
    any other sentence. The tail is no part of the denial's clause ("its peanuts" parses as a
    second complement whose "its" points at nobody, and the denial would be lost)."""
    found = _RIGHT_AFTER_DENIAL.search(sentence.text)
    if found is None:
        return None
    text = sentence.text
    return text[: found.start("tail")] + text[found.end("tail") :], found["right"]


def _put_right_in_place(view: Parsed, speech: Speech, atoms: list[Atom], right: str) -> list[Atom]:
    """The facts the denial's clause states with the right words for its value and without
    its negation: "I'm not allergic to shellfish, it's peanuts" → "… is allergic to
    peanuts" (read from the sentence so rewritten, the speaker's own word)."""
    found: list[Atom] = []
    for atom in atoms:
        if not atom.reading.negative or atom.reading.value is None:
            continue
        value = view.words[atom.reading.value]
        begin = min([value.i] + [k.i for k in view.kids(value.i, *_NOUN_MODIFIERS)])
        nots = [w for w in view.words if w.dep == "neg" and w.i < begin]
        if len(nots) != 1:
            continue
        text = view.text
        start, end = view.words[begin].start, value.start + len(value.text)
        text = text[:start] + right + text[end:]
        neg = nots[0]
        cut = neg.start
        before = view.words[neg.i - 1] if neg.i > 0 else None
        if before is not None and before.lemma == "do" and before.dep == "aux":
            cut = before.start  # the "do" of "don't work" goes with its "n't"
        rest = text[neg.start + len(neg.text) :]
        text = f"{text[:cut].rstrip()} {rest.lstrip()}".strip()
        (rewritten,) = analyse([text])
        found += [a for a in sentence_atoms(rewritten, (), speech) if not a.reading.negative]
    return found


def _speech(cast: Cast, turn: Turn, heard: Heard) -> Speech:
    me = cast.people.get(turn.event.actor_id) or Person(turn.event.actor_id, turn.speaker)
    return Speech(me, turn.to, cast, heard=heard, seq=turn.event.seq)


def fact(turn: Turn, sentence: Sentence, atom: Atom) -> Extracted:
    """The fact an atom states, filed under the person it is about."""
    atom = _named(atom)
    speaker = turn.event.actor_id
    owner = atom.about.person.actor_id if atom.about.person is not None else speaker
    kind, key = _kind_and_key(atom)
    confidence = atom.reading.confidence
    # a dated experience is an event; a relation's, said as the speaker's, is as specific
    dated = kind == "event" or (atom.dates and not atom.resolved)
    if atom.reading.kind == "experience" and dated:
        confidence = min(0.9, confidence + DATED_CONFIDENCE)
    if owner != speaker:
        confidence = min(confidence, THIRD_PARTY_CONFIDENCE)
    if atom.resolved:
        confidence = round(confidence - RESOLVED_CONFIDENCE, 2)
    boost = 0.1 if atom.dates or atom.persons else 0.0
    return Extracted(
        kind=kind,
        key=key,
        owner_type="user",
        owner_id=owner,
        statement=atom.statement,
        confidence=confidence,
        importance=min(1.0, IMPORTANCE[kind] + boost),
        source_event_ids=(turn.event.id,),
        valid_from=_valid_from(turn, atom, kind),
        fields=_fields(turn, atom, owner),
    )


# topics whose value names one place or organisation: written in lowercase ("lives in
# porto", "works at google"), it is still a name ("Porto", "Google")
_NAMED_TOPICS = words("city country hometown origin employer company school university team")
_NOT_NAMES = words("a an the my our his her their your some home work school college")
_NAME_PARTICLES = words("de da do dos das di del la le of and am im van von der den du y")


def _named(atom: Atom) -> Atom:
    """The atom with a lowercase place, employer or relation's name ("my manager is called
    dana") capitalised, in its value and its statement; a value that opens like a common
    noun phrase ("a hospital") is left."""
    value = atom.value
    parts = value.split()
    naming = atom.reading.kind == "relationship" and not atom.reading.topic
    if (
        (atom.reading.topic not in _NAMED_TOPICS and not naming)
        or not parts
        or value != value.lower()
        or parts[0] in _NOT_NAMES
        or not all(p.isalpha() for p in parts)
    ):
        return atom
    said = re.search(rf"(?:^|\s)(\w+)\s+{re.escape(value)}(?!\w)", atom.statement)
    if said is None or said.group(1).lower() in _NOT_NAMES:  # "works at a hospital"
        return atom
    name = " ".join(
        p if n and p in _NAME_PARTICLES else p[:1].upper() + p[1:] for n, p in enumerate(parts)
    )
    start, end = said.span(0)
    statement = atom.statement[:start] + said.group(0).replace(value, name) + atom.statement[end:]
    return replace(atom, value=name, statement=statement)


def relation_fact(turn: Turn, relation: Referent) -> Extracted:
    """A relation named in passing ("my manager greg", "my sister Lena"): "Noor Haddad's
    manager is Greg", under ``relationship:<role>[:<name>]``."""
    owner = relation.person or Person(turn.event.actor_id, turn.speaker)
    name = relation.short[:1].upper() + relation.short[1:]
    return Extracted(
        kind="relationship",
        key=_relation_key(relation),
        owner_type="user",
        owner_id=owner.actor_id,
        statement=f"{owner.name}'s {relation.called} is {name}.",
        confidence=0.8,
        importance=IMPORTANCE["relationship"],
        source_event_ids=(turn.event.id,),
        valid_from=turn.event.occurred_at,
        fields={"predicate": "be", "object": name, "polarity": "positive",
                "topic": relation.role, "speaker": turn.speaker, "persons": [name],
                "given": relation.given},
    )  # fmt: skip


def names_given(items: Sequence[Extracted], known: Sequence[KnownName] = ()) -> list[KnownName]:
    """The relations named by their given name so far: the channel's earlier sessions'
    (``known``), then this session's naming facts ("Noor Haddad's sister is Lena"), a
    later naming of a given name replacing an earlier one."""
    found = {(k.given, k.owner_id): k for k in known}
    for item in items:
        given = item.fields.get("given")
        if item.kind == "relationship" and isinstance(given, str) and given.isalpha():
            found[(given, item.owner_id)] = KnownName(given, item.owner_id, item.fields["topic"])
    return list(found.values())


def passing_fact(turn: Turn, said: Passing) -> Extracted:
    """A fact said in a phrase (:mod:`.passing`): "my place in gaia" → "… lives in Gaia."."""
    fields: dict[str, Any] = {"predicate": said.predicate, "object": said.value,
                              "polarity": "positive", "topic": said.topic,
                              "speaker": turn.speaker}  # fmt: skip
    if said.said_by is not None:
        fields["said_by"] = said.said_by
    if said.topic in ("city", "origin"):
        fields["location"] = said.value
    return Extracted(
        kind=said.kind,
        key=f"{said.kind}:{said.topic}",
        owner_type="user",
        owner_id=said.owner.actor_id,
        statement=said.statement,
        confidence=said.confidence,
        importance=IMPORTANCE[said.kind],
        source_event_ids=(turn.event.id,),
        valid_from=turn.event.occurred_at,
        fields=fields,
    )


def _kind_and_key(atom: Atom) -> tuple[str, str]:
    reading, about = atom.reading, atom.about
    if about.kind in ("relation", "outsider"):
        base = _relation_key(about)
        if reading.kind == "relationship" and reading.topic != "partner":
            return "relationship", base
        return "relationship", f"{base}:{reading.topic}"
    if atom.dates and reading.kind == "experience":
        return "event", f"event:{atom.dates[0].iso}:{reading.topic}"
    return reading.kind, f"{reading.kind}:{reading.topic}"


def _relation_key(about: Referent) -> str:
    if about.role is None:
        return f"relationship:{about.given or 'someone'}"
    if about.given and about.role not in UNIQUE_ROLES:
        return f"relationship:{about.role}:{about.given}"
    return f"relationship:{about.role}"


def _valid_from(turn: Turn, atom: Atom, kind: str) -> datetime:
    """When it happened, for an event or experience with a past date ("went hiking on 7
    September 2025"); else when it was said, which orders the values of a profile key."""
    said = turn.event.occurred_at
    if not atom.dates or kind in PROFILE_KINDS:
        return said
    # a calendar date is stored as its UTC midnight, the way every date is shown
    start = datetime.combine(atom.dates[0].start, time(), tzinfo=UTC)
    return min(start, said)


def _fields(turn: Turn, atom: Atom, owner: str) -> dict[str, Any]:
    reading = atom.reading
    fields: dict[str, Any] = {
        "predicate": reading.predicate,
        "object": atom.value,
        "polarity": "negative" if reading.negative else "positive",
        "topic": reading.topic,
        "speaker": turn.speaker,
    }
    if owner != turn.event.actor_id:
        fields["said_by"] = turn.event.actor_id
    if reading.rule is not None:
        fields["rule"] = reading.rule
        fields["value_type"] = reading.value_type
    if reading.kind == "identity" and reading.topic in ("city", "origin"):
        fields["location"] = atom.value
    if atom.persons:
        fields["persons"] = list(atom.persons)
    if atom.dates:
        fields.update(atom.dates[0].fields)
    return fields
