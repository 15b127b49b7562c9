"""What a clause says, read off its parse: the predicate, its complements, negation, tense.

A :class:`Frame` is the clause's head with what the fact rules ask of it; a
:class:`Reading` is what a rule made of it: the fact's kind, the topic that completes its
key, the word whose phrase is the value, the predicate, the confidence and the polarity.
"""

from __future__ import annotations

from dataclasses import dataclass

from observations.extract.analysis import Parsed, Word
from observations.extract.clauses import Clause

_MODALS = {"'d": "would", "d": "would", "'ll": "will", "ll": "will", "wo": "will", "ca": "can"}


@dataclass(frozen=True, slots=True)
class Reading:
    """A clause read as a fact: ``kind`` and ``topic`` make its key."""

    kind: str
    topic: str
    value: int | None  # the word whose phrase (its subtree in the clause) is the value
    predicate: str
    confidence: float
    negative: bool = False
    rule: str | None = None  # the rule table's row that gave it (:mod:`.rule_table`)
    value_type: str | None = None  # the type of its value, when a row read one


@dataclass(frozen=True, slots=True)
class Frame:
    """A clause's head and the parts of it the fact rules look at."""

    parsed: Parsed
    clause: Clause
    head: Word
    negative: bool  # "not", "never", "no longer", "not … anymore"
    modal: str | None  # can, will, would, should…
    past: bool  # simple past, or a perfect ("I've tried")
    subject_noun: Word | None  # the noun of a "my <noun> …" subject

    @property
    def lemma(self) -> str:
        return self.head.lemma

    @property
    def copula(self) -> bool:
        return self.head.lemma == "be" and bool(self.comps() or self.preps())

    def kids(self, *deps: str, of: int | None = None) -> list[Word]:
        """Children of the head (or of word ``of``) inside the clause."""
        inside = set(self.clause.words) | {self.clause.subject or -1}
        found = self.parsed.kids(self.head.i if of is None else of, *deps)
        return [w for w in found if w.i in inside]

    def comps(self) -> list[Word]:
        return self.kids("attr", "acomp", "oprd")

    def objects(self) -> list[Word]:
        return self.kids("dobj", "xcomp", "attr", "acomp", "ccomp")

    def preps(self, *words: str, of: int | None = None) -> list[Word]:
        """The objects of the head's prepositions (those in ``words`` when given)."""
        found = []
        for prep in self.kids("prep", "agent", "dative", of=of):
            if words and prep.lower not in words:
                continue
            found += self.kids("pobj", "pcomp", of=prep.i)
        return found

    def xcomp(self, of: int | None = None) -> Word | None:
        found = self.kids("xcomp", of=of)
        return found[0] if found else None


def reading(f: Frame, kind: str, topic: str, value: int | None, confidence: float) -> Reading:
    """A reading of ``f`` with its predicate and polarity."""
    return Reading(kind, topic, value, f.lemma, confidence, f.negative)


def frame_of(parsed: Parsed, clause: Clause, subject_noun: Word | None) -> Frame:
    head = parsed.words[clause.head]
    auxes = [w for w in parsed.kids(head.i, "aux", "auxpass") if w.i in clause.words]
    modal = next((_MODALS.get(w.lower, w.lemma) for w in auxes if w.tag == "MD"), None)
    return Frame(
        parsed=parsed,
        clause=clause,
        head=head,
        negative=_negative(parsed, clause, head),
        modal=modal,
        past=_past(head, auxes),
        subject_noun=subject_noun,
    )


def _negative(parsed: Parsed, clause: Clause, head: Word) -> bool:
    for word in parsed.kids(head.i):
        if word.i not in clause.words:
            continue
        if word.dep == "neg" or word.lower in ("never", "nobody", "nothing"):
            return True
        if word.lower == "longer" and any(k.lower == "no" for k in parsed.kids(word.i)):
            return True
    return any(
        parsed.words[i].lower == "no" and parsed.words[i + 1].lower == "longer"
        for i in clause.words
        if i + 1 < len(parsed.words)
    )


def _past(head: Word, auxes: list[Word]) -> bool:
    if any(a.lemma == "have" and a.tag in ("VBP", "VBZ", "VBD") for a in auxes):
        return head.tag == "VBN"
    if any(a.tag == "VBD" for a in auxes):  # "did go", "was trying"
        return True
    if any(a.tag in ("VBP", "VBZ", "MD") for a in auxes):
        return False
    return head.tag == "VBD"
