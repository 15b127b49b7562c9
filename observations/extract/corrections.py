"""A member corrects what a friend said of them: "its dogs not cats".

In a group, a friend's claim about a member ("dev is allergic to cats") is that member's
fact, said by the friend (:mod:`.user_facts`). When the member then answers "it's X, not
Y" and Y is what the claim said, the member has put it right: the claim is replaced by
the same statement with X for Y, now the member's own word ("Dev Patel is allergic to
dogs."), from both turns, and keyed by X where the key named Y
(``constraint:allergy:cat`` → ``constraint:allergy:dog``).

The correction is read off the words of the sentence, whose parse chat garbles ("its"
read as a possessive, "cats" as a verb): "it's", "it is" or "its" at its start (after
"no", "nah", "nope", "actually", or the friend's name), or nothing ("utrecht, not
rotterdam", "midwife!! not a nurse"), then X — nouns, names, numbers, adjectives — then
"not" and Y; a word in capitals for stress ("PINE NUTS") is written in lower case.

A reply that opens with a bare X and "actually" ("2nd dan actually 😅", "brown belt
actually"), or with a denial and "it's" X ("lol no maya, it's cashews"), corrects without
naming Y: it puts right the thing the latest claim about
the member named, when that claim was made just before (``Correction.wrong`` is empty):
"kenji just got his black belt" → "Kenji Mori got Kenji Mori's 2nd dan."
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from observations.extract.analysis import Parsed, Word, analyse
from observations.extract.base import Extracted
from observations.extract.clauses import SUBJECTS
from observations.extract.dates import DATE_FIELDS
from observations.extract.topics import part
from observations.extract.vocabulary import JUDGEMENTS, words

_LEADING = words("no nah nope actually well oh wait but ty thx thanks lol haha")
_DENIALS = words("no nah nope")
_CONTENT = ("NOUN", "PROPN", "NUM", "ADJ")
_ANSWER = (*_CONTENT, "DET", "ADP")
_LOOSE = ("ROOT", "npadvmod", "dep", "intj", "appos")  # how a bare X hangs on what follows
# what a bare "X actually" that is a remark rather than a correction says ("nice weather")
_REMARKS = JUDGEMENTS | words("nice lovely cool fine weird funny cute fun sweet wild weather")
OWN_CONFIDENCE = 0.8  # what a member says of themself (above a friend's claim)


@dataclass(frozen=True, slots=True)
class Correction:
    """ "it's X, not Y": the right words and the wrong ones."""

    right: tuple[Word, ...]
    wrong: tuple[Word, ...]  # what follows "not", to the end of the sentence
    answer: bool = False  # "it's X" answering a claim asked to be confirmed: X is its value

    @property
    def text(self) -> str:
        return "".join(w.text + (" " if w.space else "") for w in self.right).strip()


def correction(parsed: Parsed, opening: bool = False) -> Correction | None:
    """The sentence as "it's X, not Y" (or, when it is ``opening`` its turn, as "X
    actually"), if it is one."""
    bare = _bare(parsed) if opening else None
    if bare is not None:
        return bare
    # words, not marks (a full stop in lower-case chat is at times tagged otherwise)
    found = [w for w in parsed.words if w.pos != "PUNCT" and any(c.isalnum() for c in w.text)]
    n = 0
    while n < len(found) and found[n].lower in _LEADING:
        n += 1
    denied = any(w.lower in _DENIALS for w in found[:n])
    if (
        n + 1 < len(found)
        and found[n + 1].lower in ("it", "its")
        and (
            found[n].pos == "PROPN" or denied  # "no maya, it's…": maya, whatever its tag
        )
    ):
        n += 1  # whom it is said to: "Jun it's PINE NUTS not cashews"
    rest = [w.lower for w in found[n : n + 2]]
    said_it = rest[:1] == ["its"] or rest in (["it", "'s"], ["it", "is"], ["it", "was"])
    if rest[:1] == ["its"]:
        n += 1
    elif said_it:
        n += 2  # else X opens the sentence on its own: "utrecht, not rotterdam"
    nots = [k for k in range(n, len(found)) if found[k].lower == "not"]
    if not nots and opening and denied and said_it:
        return _denied_then_said(parsed, found[n:])  # "lol no maya, it's cashews."
    if not nots or nots[0] == n or nots[0] == len(found) - 1:
        return None
    right = tuple(found[n : nots[0]])
    if len(right) > 4 or any(not _content(w) and w.pos != "DET" for w in right):
        return None
    if not _content(right[-1]):
        return None
    right = tuple(_unshouted(w) for w in (_uncapitalised(right[0]), *right[1:]))
    wrong = []  # to the end of the sentence, or to a full stop in lower-case chat
    for w in parsed.words[found[nots[0]].i + 1 :]:
        if w.text in (".", "!", "?"):
            break
        if w.pos != "PUNCT":
            wrong.append(w)
    return Correction(right, tuple(wrong))


def _denied_then_said(parsed: Parsed, said: list[Word]) -> Correction | None:
    """ "no maya, it's cashews": after a denial, "it's" and X to the sentence's end, X at
    most four content words ending in a noun or a number (not "no it's fine"); like "X
    actually", it puts right the latest claim."""
    right: list[Word] = []
    for w in said:
        if right and any(p.text in (".", "!", "?") for p in parsed.words[right[-1].i + 1 : w.i]):
            break  # to the sentence's end: "it's cashews. peanuts are fine"
        right.append(w)
    if not right or len(right) > 4 or not all(_content(w) for w in right):
        return None
    if right[-1].pos not in ("NOUN", "PROPN", "NUM") or any(w.lower in _REMARKS for w in right):
        return None
    return Correction(tuple(_unshouted(w) for w in right), ())


def _bare(parsed: Parsed) -> Correction | None:
    """The sentence as "X actually …": X a noun phrase of at most four
    words without an article, owner or judging word ("2nd dan", "brown belt"; not "nice
    weather"), standing on its own (not the object of what follows: "coffee actually i
    prefer")."""
    found = [w for w in parsed.words if w.pos != "PUNCT"]
    at = next((n for n, w in enumerate(found[:5]) if w.lower == "actually"), None)
    if not at:
        return None
    right = found[:at]
    if not right or len(right) > 4 or any(w.pos not in _CONTENT for w in right):
        return None
    last = right[-1]
    if last.pos not in ("NOUN", "PROPN") or _emoji(last) or any(w.lower in _REMARKS for w in right):
        return None
    inside = {w.i for w in right}
    if any(w.head not in inside and not _loose(parsed, w) for w in right):
        return None  # a part of what follows ("coffee actually i prefer")
    return Correction((_uncapitalised(right[0]), *right[1:]), ())


def _unshouted(word: Word) -> Word:
    """A word written in capitals for stress ("DOGS", "MIDWIFERY") in lower case."""
    if word.text.isupper() and len(word.text) > 1:
        return replace(word, text=word.text.lower())
    return word


def _uncapitalised(first: Word) -> Word:
    """The first word of a sentence without the sentence's capital, unless a name."""
    if first.pos != "PROPN" and first.text[:1].isupper():
        return replace(first, text=first.text.lower())
    return first


def answered(parsed: Parsed) -> Correction | None:
    """A clause "it's X" that ends its sentence ("… and it's the 13th of june"): X at most
    five words (names, numbers, nouns, with "the" and "of"), the answer to a claim asked
    to be confirmed."""
    for sentence in parsed.sentences:
        found = [parsed.words[i] for i in sentence]
        found = [w for w in found if w.pos != "PUNCT" and not _emoji(w)]
        for n in range(len(found) - 2):
            it, be = found[n], found[n + 1]
            if it.lower != "it" or it.dep != "nsubj" or be.lemma != "be" or it.head != be.i:
                continue
            right = found[n + 2 :]
            if len(right) > 5 or any(w.pos not in _ANSWER for w in right):
                return None
            if right[-1].pos == "ADP" or (right[0].pos == "DET" and right[0].lower != "the"):
                return None
            return Correction(tuple(right), (), answer=True)
    return None


def _loose(parsed: Parsed, word: Word) -> bool:
    """X hangs loosely on what follows: as a fragment, or as a second subject of a verb
    that has its own ("half marathon actually the full one is next year")."""
    if word.dep in _LOOSE:
        return True
    others = [k for k in parsed.kids(word.head, *SUBJECTS) if k.i != word.i]
    return word.dep in SUBJECTS and bool(others)


def _emoji(word: Word) -> bool:
    return not any(c.isalnum() for c in word.text)


def _content(word: Word) -> bool:
    """A word X can be made of: a noun, name, number or adjective, or a plural noun the
    parse took for a verb ("tree nuts not peanuts": "nuts" as VBZ)."""
    return word.pos in _CONTENT or (word.tag == "VBZ" and word.lower.endswith("s"))


def corrects(claim: Extracted, said: Correction) -> bool:
    """Whether the correction's Y is the claim's value ("not cats" of "allergic to cats");
    a bare correction ("2nd dan actually") puts right a claim whose value ends in a noun."""
    if said.answer:
        return bool(claim.fields.get("object"))
    if not said.wrong:
        return bool(_named_thing(claim)[0])
    value = _folded(str(claim.fields.get("object", "")))
    return bool(value) and (_whole(value, said) or _within(value, said) is not None)


def _whole(value: Sequence[str], said: Correction) -> bool:
    """Whether Y is the claim's whole value ("not cats" of "cats")."""
    return [w.lower for w in said.wrong][: len(value)] == list(value)


_ARTICLES = words("the a an my his her their our")


def _within(value: Sequence[str], said: Correction) -> tuple[str, str] | None:
    """ "it's the midwifery program not nursing" of "the nursing program at dal": Y names a
    run inside the value ("nursing"); what stands for it is X without its article and
    without the words it shares with what follows Y there ("midwifery"). The run and its
    replacement, as X wrote it (a shouted word in lower case)."""
    wrong = list(_folded(" ".join(w.text for w in said.wrong)))
    right = [w for w in said.right if re.fullmatch(r"[\w']+", w.text)]
    if not wrong or not right or len(wrong) >= len(value):
        return None
    at = next((k for k in range(len(value)) if list(value[k : k + len(wrong)]) == wrong), None)
    if at is None:
        return None
    after = list(value[at + len(wrong) :])
    if right[0].lower in _ARTICLES:
        right = right[1:]
    shared = max((m for m in range(len(right)) if [w.lower for w in right[-m:]] == after[:m]),
                 default=0)  # fmt: skip
    core = right[: len(right) - shared] if shared else right
    if not core:
        return None
    text = " ".join(_unshouted(w).text for w in core)
    return " ".join(wrong), text


def _named_thing(claim: Extracted) -> tuple[str, str]:
    """The thing the claim's value ends by naming, without its article or owner ("black
    belt" of "got Kenji Mori's black belt"), as written in the statement, and its noun's
    lemma (("", "") when the value ends in no noun). The statement is parsed, not the
    value alone ("google" alone reads as a verb)."""
    value = str(claim.fields.get("object", ""))
    at = claim.statement.casefold().rfind(value.casefold())
    if not value or at < 0:
        return "", ""
    (parsed,) = analyse([claim.statement])
    ending = _without_date(parsed, [w for w in parsed.words if at <= w.start < at + len(value)])
    if not ending or ending[-1].pos not in ("NOUN", "PROPN"):
        return "", ""
    last = ending[-1]
    start = max(last.left, ending[0].i)
    for kid in parsed.kids(last.i, "det", "poss"):
        start = max(start, kid.right + 1)
    begin = parsed.words[start].start
    return claim.statement[begin : last.start + len(last.text)], last.lemma


def _without_date(parsed: Parsed, words: list[Word]) -> list[Word]:
    """The value's words without a date phrase at their end ("… marathon on 12 October
    2025" → "… marathon")."""
    for k in range(len(words) - 1, 0, -1):
        if words[k].pos == "ADP":
            tail = words[k + 1 :]
            dated = any(w.pos == "NUM" for w in tail)
            if dated and all(w.pos in ("NUM", "PROPN", "NOUN", "DET", "PUNCT") for w in tail):
                return words[:k]
            break
    return words


def corrected(
    claim: Extracted, said: Correction, event_id: int, when: datetime
) -> Extracted | None:
    """The claim put right: X for Y in its statement and value, the member's own word."""
    value = str(claim.fields.get("object", ""))
    right_text = said.text
    inside = _within(_folded(value), said) if said.wrong else None
    if said.answer:
        wrong_text, wrong = value, ""
    elif inside is not None and not _whole(_folded(value), said):
        (wrong_text, right_text), wrong = inside, ""  # the key names no part of it
    else:
        wrong_text, wrong = (value, said.wrong[0].lemma) if said.wrong else _named_thing(claim)
    at = claim.statement.casefold().rfind(wrong_text.casefold())
    if not wrong_text or at < 0:
        return None
    statement = claim.statement[:at] + right_text + claim.statement[at + len(wrong_text) :]
    wrong = part(wrong) if wrong else ""
    key = claim.key
    if wrong and key.endswith((f":{wrong}", f"-{wrong}")):
        key = key[: -len(wrong)] + part(said.right[-1].lemma)
    # an answer with another value leaves behind what the claim's date said
    dropped = ("said_by", *(DATE_FIELDS if said.answer else ()))
    fields = {k: v for k, v in claim.fields.items() if k not in dropped}
    where = value.casefold().rfind(wrong_text.casefold())
    if where < 0:
        fields["object"] = right_text
    else:
        fields["object"] = value[:where] + right_text + value[where + len(wrong_text) :]
    if "location" in fields:
        fields["location"] = said.text
    return replace(
        claim,
        key=key,
        statement=statement,
        confidence=max(claim.confidence, OWN_CONFIDENCE),
        source_event_ids=(*claim.source_event_ids, event_id),
        valid_from=when,
        fields=fields,
    )


def _folded(text: str) -> Sequence[str]:
    return re.findall(r"[\w']+", text.casefold())
