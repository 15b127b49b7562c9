"""A faster stand-in for the pipeline's attribute ruler: its own patterns, read by lookups.

The attribute ruler of ``en_core_web_sm`` sets coarse parts of speech, morphology and a few
lemmas from ~180 patterns over a token's tag, lower-cased text and dependency (a few span
two tokens: "gon na", "let 's"). spaCy runs them with its Matcher, which costs about a
third of the whole parse on chat-length texts. :class:`Attributes` compiles the same
patterns into rules, matches every rule against
the tokens as the parser left them, and sets the same attributes in the same order (a later
pattern wins), with spaCy's own ``set_token_attrs``. Which rules a token's own features
(tag, text, dependency, space) settle is worked out once per distinct features, so that
only the few patterns of two tokens look further. A test checks it against the ruler.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spacy.attrs import DEP, IS_SPACE, LOWER, TAG
from spacy.tokens._retokenize import set_token_attrs

_FIELDS = {"TAG": 0, "LOWER": 1, "DEP": 2, "IS_SPACE": 3}
Features = tuple[str, str, str, bool]


@dataclass(frozen=True, slots=True)
class _Rule:
    order: int  # the pattern's position: later patterns win
    tokens: tuple[tuple[tuple[int, Any], ...], ...]  # per token: (field, condition)
    target: int  # which token of the match gets the attributes
    attrs: dict[int, Any]  # normalized, as the ruler keeps them

    def rest(self) -> tuple[tuple[int, int, Any], ...]:
        """What is left to check once the first token's own features hold, as (offset,
        field, condition)."""
        return tuple(
            (n, field, condition)
            for n, conditions in enumerate(self.tokens)
            for field, condition in conditions
            if n > 0
        )


# a rule that depends on the next tokens: its span and what is left to check
_Maybe = tuple[_Rule, int, tuple[tuple[int, int, Any], ...]]


def _all_hold(
    features: Sequence[Features], at: int, rest: tuple[tuple[int, int, Any], ...]
) -> bool:
    return all(_holds(features[at + n][field], condition) for n, field, condition in rest)


def _holds(value: Any, condition: Any) -> bool:
    if not isinstance(condition, dict):
        return bool(value == condition)
    if "IN" in condition:
        return value in condition["IN"]
    if "NOT_IN" in condition:
        return value not in condition["NOT_IN"]
    return re.search(condition["REGEX"], value) is not None


class Attributes:
    """The attribute ruler ``ruler``'s patterns, applied without its Matcher."""

    # plans kept, one per distinct (tag, text, dependency, space): past this many, they
    # are worked out afresh
    MAX_PLANS = 200_000

    def __init__(self, ruler: Any) -> None:
        self._by_text: dict[tuple[int, str], list[_Rule]] = {}
        for order, pattern in enumerate(ruler.patterns):
            for tokens in pattern["patterns"]:
                rule = _rule(order, tokens, ruler.indices[order], ruler.attrs[order])
                self._by_text.setdefault(_bucket(rule), []).append(rule)
        self._plans: dict[Features, tuple[tuple[_Rule, ...], tuple[_Maybe, ...]]] = {}

    def _plan(self, own: Features) -> tuple[tuple[_Rule, ...], tuple[_Maybe, ...]]:
        """The rules that match any token with these features (its tag, text, dependency
        and whether it is a space), and those that depend on the tokens after it, with what
        is left to check: worked out once per distinct features."""
        plan = self._plans.get(own)
        if plan is None:
            sure: list[_Rule] = []
            maybe: list[_Maybe] = []
            found = [(0, own[0]), (1, own[1]), (-1, "")]
            candidates = sorted(
                (r for bucket in found for r in self._by_text.get(bucket, ())),
                key=lambda r: r.order,
            )
            for rule in candidates:
                if not all(_holds(own[f], c) for f, c in rule.tokens[0]):
                    continue
                if len(rule.tokens) == 1:
                    sure.append(rule)
                else:
                    maybe.append((rule, len(rule.tokens), rule.rest()))
            if len(self._plans) >= self.MAX_PLANS:
                self._plans.clear()
            plan = self._plans[own] = (tuple(sure), tuple(maybe))
        return plan

    def __call__(self, doc: Any) -> Any:
        strings = doc.vocab.strings
        rows = doc.to_array([TAG, LOWER, DEP, IS_SPACE]).tolist()
        features = [(strings[t], strings[w], strings[d], bool(s)) for t, w, d, s in rows]
        hits: list[tuple[int, int, dict[int, Any]]] = []
        for at, own in enumerate(features):
            sure, maybe = self._plan(own)
            hits.extend((rule.order, at + rule.target, rule.attrs) for rule in sure)
            for rule, span, rest in maybe:
                if at + span <= len(features) and _all_hold(features, at, rest):
                    hits.append((rule.order, at + rule.target, rule.attrs))
        hits.sort(key=lambda hit: hit[0])  # stable: within a rule, in text order
        for _, at, attrs in hits:
            set_token_attrs(doc[at], attrs)
        return doc


def _bucket(rule: _Rule) -> tuple[int, str]:
    """Where a rule is filed: by the tag or text its first token must have, if any."""
    first = dict(rule.tokens[0])
    for field in (0, 1):
        if isinstance(first.get(field), str):
            return (field, first[field])
    return (-1, "")


def _rule(order: int, tokens: list[dict[str, Any]], index: int, attrs: Any) -> _Rule:
    compiled = tuple(
        tuple((_FIELDS[key], _condition(value)) for key, value in token.items()) for token in tokens
    )
    return _Rule(order, compiled, index if index >= 0 else len(tokens) + index, attrs)


def _condition(value: Any) -> Any:
    if isinstance(value, dict) and ("IN" in value or "NOT_IN" in value):
        key = "IN" if "IN" in value else "NOT_IN"
        return {key: frozenset(value[key])}
    return value
