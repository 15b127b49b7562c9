"""The matching rules of probe checks, on what the system returned (pure).

Strings match case-insensitively as substrings (typographic apostrophes read as ``'``).
What each kind reads:

* the **text**: the context bundle for the check's query scoped to its user, as prompt
  text — ``expect_any`` of current_fact and resolved_date, and everything an abstain check
  must not find;
* the **current** statements: what the system presents as the user's facts, holding now —
  the user's profile rows and the fact entries (not episodic records, not session
  summaries) among the bundle's memories. An attribution's ``expect_any`` must be found
  there (a record of a group chat is shown to all its members: it attributes nothing); a
  ``stale`` value or an attribution's ``must_not_contain`` fails only there (a record of
  what was once said is not an assertion that it still holds);
* the **facts** of a user: their active fact entries (no_duplicates counts them;
  ``not_for`` looks in them);
* for isolation, the text and everything else in the user's scope: their profile and all
  their active entries, whatever the kind;
* for a skill, the agent's skill proposal that shares the most words with the query: it
  must name an ``expect_any`` (and every ``expect_all``) in its key, goal, steps or
  where it applies, and none of its steps may use an ``avoid_any`` (its failures, the
  "don't" list, may).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from ops.eval.probes_model import Check

ABRIDGED = 300  # characters of a returned text kept in a report
_WORD = re.compile(r"[a-z0-9]+")
_WARNING = re.compile(r"\b(?:don't|do not|never|avoid|instead of)\b")
# words of a question that say nothing of its task
_STOP = frozenset(
    _WORD.findall(
        "the a an to for of and or in on at with my me i you it is was be what how which who "
        "when where did does do can could should would again"
    )
)


@dataclass(frozen=True, slots=True)
class Skill:
    id: int
    key: str
    goal: str
    steps: tuple[str, ...]  # each step as text (a tool step as its JSON)
    applies_to: tuple[str, ...]
    evidence_count: int


@dataclass(frozen=True, slots=True)
class Answer:
    """What the system returned for one check, as its kind reads it (see the module doc)."""

    text: str = ""
    current: tuple[str, ...] = ()
    facts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scope: tuple[str, ...] = ()
    skills: tuple[Skill, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    passed: bool
    reason: str  # why it failed ("" when it passed)
    returned: str  # what was returned, abridged


def beliefs(answer: Answer) -> Answer:
    """The answer as only memory's beliefs give it: the user's current facts (profile rows
    and fact entries) stand for the bundle's text, so a check passes on what memory
    believes, not on a copy of a message or a summary that happens to carry the words."""
    return replace(answer, text="\n".join(answer.current))


def normalize(text: str) -> str:
    return text.casefold().replace("\u2019", "'").replace("\u2018", "'")


def found(strings: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The strings that occur in any of the texts."""
    hay = [normalize(t) for t in texts]
    return [s for s in strings if any(normalize(s) in h for h in hay)]


def abridge(text: str, limit: int = ABRIDGED) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def evaluate(check: Check, answer: Answer) -> Outcome:
    """Whether the check passes on what the system returned."""
    match check.kind:
        case "current_fact" | "resolved_date" | "attribution":
            return _positive(check, answer)
        case "no_duplicates":
            return _no_duplicates(check, answer)
        case "abstain":
            return _absent(check.must_not_contain, [answer.text], answer.text, "fabricated")
        case "isolation":
            texts = [answer.text, *answer.scope]
            return _absent(check.must_not_contain, texts, " | ".join(texts), "leaked")
        case "skill":
            return _skill(check, answer)
    raise ValueError(f"unknown check kind {check.kind!r}")


def _positive(check: Check, answer: Answer) -> Outcome:
    # An attribution asks whose fact it is: a record of a group chat, shown to everyone in
    # it, says nothing of that, so only what is presented as the user's facts counts.
    if check.kind == "attribution":
        where, returned = answer.current, abridge(" | ".join(answer.current) or "no fact")
    else:
        where, returned = (answer.text,), abridge(answer.text)
    if not found(check.expect_any, where):
        return Outcome(False, "none of expect_any", returned)
    wrong = check.stale or check.must_not_contain
    if hits := found(wrong, answer.current):
        stated = next(s for s in answer.current if found(hits, [s]))
        what = "stale" if check.stale else "must_not_contain"
        return Outcome(False, f"{what} {hits[0]!r} presented as current", abridge(stated))
    for user, strings in check.not_for.items():
        facts = answer.facts.get(user, ())
        if hits := found(strings, facts):
            stated = next(s for s in facts if found(hits, [s]))
            return Outcome(False, f"{hits[0]!r} in a fact of {user}", abridge(stated))
    return Outcome(True, "", returned)


def _no_duplicates(check: Check, answer: Answer) -> Outcome:
    assert check.user is not None  # the file's validation requires it
    facts = answer.facts.get(check.user, ())
    matching = [f for f in facts if found(check.topic_any, [f])]
    returned = abridge(" | ".join(matching) or "no fact on the topic")
    if not matching:
        return Outcome(False, "no current fact on the topic", returned)
    if len(matching) > check.max_current:
        return Outcome(
            False, f"{len(matching)} current facts (at most {check.max_current})", returned
        )
    return Outcome(True, "", returned)


def _absent(strings: tuple[str, ...], texts: list[str], returned: str, what: str) -> Outcome:
    if hits := found(strings, texts):
        stated = next(t for t in texts if found(hits, [t]))
        return Outcome(False, f"{what} {hits[0]!r}", abridge(_around(stated, hits[0])))
    return Outcome(True, "", abridge(returned))


def _around(text: str, hit: str, width: int = ABRIDGED // 2) -> str:
    """The part of ``text`` around the first occurrence of ``hit``."""
    at = normalize(text).find(normalize(hit))
    return text[max(0, at - width) : at + len(hit) + width] if at >= 0 else text


def chosen_skill(query: str, skills: Iterable[Skill]) -> Skill | None:
    """The skill that shares the most words with the query (then the most evidence, then
    the first proposed); None when the agent has none."""
    words = set(_WORD.findall(normalize(query))) - _STOP

    def rank(s: Skill) -> tuple[int, int, int]:
        own = set(_WORD.findall(normalize(" ".join([s.key, s.goal, *s.applies_to]))))
        return (-len(words & own), -s.evidence_count, s.id)

    return min(skills, key=rank, default=None)


def _warning(step: str) -> bool:
    """A step in words that says what not to do (a tool step, JSON text, never is)."""
    return not step.startswith("{") and _WARNING.search(normalize(step)) is not None


def _skill(check: Check, answer: Answer) -> Outcome:
    assert check.query is not None
    skill = chosen_skill(check.query, answer.skills)
    if skill is None:
        return Outcome(False, "the agent has no skill", "")
    named = [skill.key, skill.goal, *skill.steps, *skill.applies_to]
    returned = abridge(f"{skill.key}: {skill.goal}; steps: {' / '.join(skill.steps)}")
    if not found(check.expect_any, named):
        return Outcome(False, "none of expect_any", returned)
    if missing := [s for s in check.expect_all if not found([s], named)]:
        return Outcome(False, f"expect_all {missing[0]!r} missing", returned)
    recommended = [s for s in skill.steps if not _warning(s)]
    if hits := found(check.avoid_any, recommended):
        return Outcome(False, f"a step uses {hits[0]!r}", returned)
    return Outcome(True, "", returned)
