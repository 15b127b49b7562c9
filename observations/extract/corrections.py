"""A member corrects what a friend said of them: "its dogs not cats".

In a group, a friend's claim about a member ("dev is allergic to cats") is that member's
fact, said by the friend (:mod:`.user_facts`). When the member then answers "it's X, not
Y" and Y is what the claim said, the member has put it right: the claim is replaced by
the same statement with X for Y, now the member's own word ("Dev Patel is allergic to
dogs."), from both turns, and keyed by X where the key named Y
(``constraint:allergy:cat`` → ``constraint:allergy:dog``).

The correction is read off the words of the sentence, whose parse chat garbles ("its"
read as a possessive, "cats" as a verb): "it's", "it is" or "its" at its start (after
"no", "nah", "nope", "actually"), then X — nouns, names, numbers, adjectives — then
"not" and Y.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from observations.extract.analysis import Parsed, Word
from observations.extract.base import Extracted
from observations.extract.topics import part
from observations.extract.vocabulary import words

_LEADING = words("no nah nope actually well oh")
_CONTENT = ("NOUN", "PROPN", "NUM", "ADJ")
OWN_CONFIDENCE = 0.8  # what a member says of themself (above a friend's claim)


@dataclass(frozen=True, slots=True)
class Correction:
    """ "it's X, not Y": the right words and the wrong ones."""

    right: tuple[Word, ...]
    wrong: tuple[Word, ...]  # what follows "not", to the end of the sentence

    @property
    def text(self) -> str:
        return "".join(w.text + (" " if w.space else "") for w in self.right).strip()


def correction(parsed: Parsed) -> Correction | None:
    """The sentence as "it's X, not Y", if it is one."""
    found = [w for w in parsed.words if w.pos != "PUNCT"]
    n = 0
    while n < len(found) and found[n].lower in _LEADING:
        n += 1
    rest = [w.lower for w in found[n : n + 2]]
    if rest[:1] == ["its"]:
        n += 1
    elif rest in (["it", "'s"], ["it", "is"], ["it", "was"]):
        n += 2
    else:
        return None
    nots = [k for k in range(n, len(found)) if found[k].lower == "not"]
    if not nots or nots[0] == n or nots[0] == len(found) - 1:
        return None
    right = tuple(found[n : nots[0]])
    if len(right) > 4 or any(w.pos not in (*_CONTENT, "DET") for w in right):
        return None
    if right[-1].pos not in _CONTENT:
        return None
    return Correction(right, tuple(found[nots[0] + 1 :]))


def corrects(claim: Extracted, said: Correction) -> bool:
    """Whether the correction's Y is the claim's value ("not cats" of "allergic to cats")."""
    value = _folded(str(claim.fields.get("object", "")))
    wrong = [w.lower for w in said.wrong]
    return bool(value) and wrong[: len(value)] == value


def corrected(
    claim: Extracted, said: Correction, event_id: int, when: datetime
) -> Extracted | None:
    """The claim put right: X for Y in its statement and value, the member's own word."""
    value = str(claim.fields.get("object", ""))
    at = claim.statement.casefold().rfind(value.casefold())
    if at < 0:
        return None
    statement = claim.statement[:at] + said.text + claim.statement[at + len(value) :]
    wrong = part(said.wrong[0].lemma)
    key = claim.key
    if key.endswith(f":{wrong}"):
        key = key[: -len(wrong)] + part(said.right[-1].lemma)
    fields = {k: v for k, v in claim.fields.items() if k != "said_by"}
    fields["object"] = said.text
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
