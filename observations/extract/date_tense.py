"""Past or future: which way a bare "Monday" or "in March" points, read from the verbs.

A token rule, cheap enough to run on every sentence that holds such a phrase: the tense
marker nearest before the phrase in its sentence decides (else the nearest after it).

* future: will, 'll, shall, won't, gonna, going to, about to, plan(ning) to, can, can't,
  let's, see you, what starts, begins, ends, expires, lapses, renews or runs out (the
  present of a schedule: "i start at the depot on monday"), a present progressive
  ("I'm flying out on Monday": be + -ing, which with a date means an arrangement), and an
  arrangement made, whatever its tense ("booked a week in march", "scheduled the move for
  june", "signed up for the half in october": what was booked is ahead);
* past: was, were, did, had, been, their negations, couldn't, used to, a past form of a
  common irregular verb, or a word in -ed that is not an adjective after am/is/are nor a
  participle after "get" or "be" ("I'm excited", "is getting married" are not past, "we
  got married" is).

A phrase right after "for" ("booked a table for Friday") or counted from ("a week from
friday") is future, right after "since" past; after "to" or "until" with a verb of
rescheduling before it in the sentence ("my interview got moved to friday", "pushed back
to monday", "moved my review to friday") future, whatever the verb's tense; after "is",
"is on" or "is in" ("my interview is on friday", "the wedding is march 15", "the trip is
in november") future; right after "until" or "till" in a clause with no past mark ("im
at the conference till wednesday") future; right after a mishap one still feels
("cranky from the acl op in jan", "sore after my fall on monday") past. After the
phrase, only its own clause counts ("the wedding is march 15 and i haven't finished my
speech"). An acknowledgement opening the clause ("got it, Monday then", "understood")
says nothing of the phrase's time and is not read as past. No marker, no tense: the
caller keeps its default.
"""

from __future__ import annotations

import re
from typing import Literal

from observations.extract.date_words import UNITS

Tense = Literal["past", "future"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_SENTENCE_END = re.compile(r"[.!?;\n]")
# where the clause after a phrase ends: its marks are another clause's ("the wedding is
# march 15 and i haven't finished my speech")
_CLAUSE_END = re.compile(r",|\b(?:and|but|so|because|while)\b")
_FUTURE = _words(
    "will 'll shall won't gonna can can't cannot let's i'll we'll you'll he'll she'll "
    "they'll it'll that'll expires expire renews lapses ends start starts begin begins"
)
# what is booked, scheduled or signed up for lies ahead of the booking
_ARRANGED = _words(
    "book books booked booking schedule schedules scheduled reserve reserved registered "
    "signed enrolled entered"
)
_FUTURE_BEFORE_TO = frozenset({"going", "about", "plan", "plans", "planning"})
# "see you on monday"; what runs out, ends or expires on a day has not yet ("my visa
# expires on june 3", "my passport runs out in november")
_FUTURE_PAIRS = frozenset({("see", "you"), ("runs", "out")})
_PAST = _words(
    "was were did had been wasn't weren't didn't hadn't couldn't used saw went came got "
    "met made took told said ate ran bought found left gave thought felt heard kept lost "
    "paid sat sent spent stood wrote drove flew began broke brought caught chose drank "
    "fell forgot knew rode sang slept spoke swam taught threw woke won wore became built "
    "dug fought hid held hung led meant sold shot shut split spread stole stuck swore "
    "swung understood"
)
_BE_PRESENT = _words("am 'm is 's are 're i'm we're you're they're he's she's it's")
_ADVERBS = _words("so very really not super pretty just still all also too")
_LEADING: dict[str, Tense] = {"for": "future", "since": "past"}
_RESCHEDULED = _words(
    "moved pushed postponed rescheduled delayed bumped changed shifted move push postpone "
    "reschedule delay bump change shift"
)
# "got it", "gotcha", "understood", "noted" as a reply, after an optional "ok", "great"…
_ACKNOWLEDGEMENT = re.compile(
    r"^\W*(?:(?:ok|okay|alright|great|perfect|sure)\W+)?(?:got it|gotcha|understood|noted)\b\W+"
)
# a mishap one still feels, right before the phrase: "from the acl op in", "after my fall on"
_MISHAP = re.compile(
    r"\b(?:from|after|since) (?:the|my|that|this|a) (?:[a-z]+ )?(?:op|surgery|operation|"
    r"accident|injury|fall|crash|fracture|sprain|break|tear)\s+(?:in|on|last|back in)?\s*$"
)
_NOUNS = _words(
    "thing something nothing anything everything morning evening king ring spring string "
    "bring sing wing ceiling wedding building"
)


def tense_at(text: str, start: int, end: int) -> Tense | None:
    """The tense of the sentence around ``text[start:end]``, or ``None``."""
    before = text[:start].lower()
    ends = [m.end() for m in _SENTENCE_END.finditer(before)]
    left = _ACKNOWLEDGEMENT.sub("", before[ends[-1] if ends else 0 :])
    after = text[end:].lower()
    next_end = _SENTENCE_END.search(after)
    right = after[: next_end.start() if next_end else len(after)]
    right = right[: next_clause.start()] if (next_clause := _CLAUSE_END.search(right)) else right
    last = left.split()[-3:]
    last_word = last[-1] if last else ""
    if last_word in _LEADING:
        return _LEADING[last_word]
    if last_word == "from" and len(last) > 1 and last[-2].rstrip("s") in UNITS:
        return "future"  # "a week from friday": counted on from the next friday
    if _MISHAP.search(left):
        return "past"  # "cranky from the acl op in jan": what one still feels happened
    moved_to = last_word in _RESCHEDULED and text[start:end].lower().startswith(("to ", "for "))
    if moved_to or (last_word in ("to", "till", "until") and _RESCHEDULED & set(left.split())):
        return "future"  # "got moved to friday", "moved my review to friday": ahead of the move
    if last_word in ("till", "until", "til") and "past" not in _markers(left, opening=True):
        return "future"  # "im at the conference till wednesday": a stay lasts into the day
    before_on = last[-2] if last_word in ("on", "in") and len(last) > 1 else last_word
    if before_on in _BE_PRESENT:
        return "future"  # "my interview is on friday", "the trip is in november": set, ahead
    found = _markers(left, opening=True)
    if found:
        return found[-1]
    found = _markers(right)
    return found[0] if found else None


def _markers(clause: str, *, opening: bool = False) -> list[Tense]:
    """The tense marks of ``clause``'s words, in order; an ``opening`` clause starts its
    sentence, where chat leaves out the "I'm" of a progressive ("signing up for the berlin
    marathon in september")."""
    words = [w.replace("\u2019", "'") for w in _WORD.findall(clause.replace("\u2019", "'"))]
    marks: list[Tense] = []
    for i, word in enumerate(words):
        mark = _mark(word, words[i + 1] if i + 1 < len(words) else "")
        if mark is None and len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
            passive = _after_be(words, i) or (i > 0 and words[i - 1] in _GET_OR_BE)
            mark = None if passive else "past"
        if mark is None and len(word) > 4 and word.endswith("ing") and word not in _NOUNS:
            progressive = _after_be(words, i) or (opening and i == 0)
            mark = "future" if progressive else None
        if mark is not None:
            marks.append(mark)
    return marks


# before a participle, a form of "get" or "be" that carries its own tense: "is getting
# married" is ahead, "will be finished" too; "got married" is past by "got"
_GET_OR_BE = _words("get gets getting be being")


def _mark(word: str, following: str) -> Tense | None:
    if word in _FUTURE or word in _ARRANGED or word.endswith("'ll"):
        return "future"
    if (word in _FUTURE_BEFORE_TO and following == "to") or (word, following) in _FUTURE_PAIRS:
        return "future"
    if word in _PAST:
        return "past"
    return None


def _after_be(words: list[str], i: int) -> bool:
    """Whether ``words[i]`` follows am/is/are, across adverbs ("I'm so excited")."""
    for previous in reversed(words[max(0, i - 3) : i]):
        if previous in _BE_PRESENT or previous.endswith("'s"):  # "my sister's getting"
            return True
        if previous not in _ADVERBS:
            return False
    return False
