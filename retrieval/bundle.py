"""The context bundle: what retrieval hands an agent, packed whole-item under a token budget.

Sections, in priority order, with the share of the budget each is guaranteed:

    profile    10 %  stable facts about the user; short and nearly always relevant
    memories   40 %  entries relevant to the query, each with its date and kind
    summaries  20 %  earlier sessions relevant to the query, with time window and topics
    skills     10 %  published skills relevant to the query (agents)
    recent     20 %  the open session's latest messages (the newest kept first)

`pack` fills the sections in that order, each up to its share plus whatever the sections
before it left unused; then, in the same order, it hands what is still left to items that
did not fit. Items are taken whole, in the order given (recent: newest first), or dropped;
a too-large item is skipped and smaller ones after it may still fit. Headers count.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import orjson

from retrieval.items import (
    Item,
    MemoryItem,
    ProfileItem,
    RecentMessage,
    SkillItem,
    SummaryItem,
    render_item,
)
from retrieval.tokens import TokenCounter

T = TypeVar("T", bound=Item)

SECTIONS = ("profile", "memories", "summaries", "skills", "recent")
DEFAULT_SHARES: Mapping[str, float] = MappingProxyType(
    {"profile": 0.10, "memories": 0.40, "summaries": 0.20, "skills": 0.10, "recent": 0.20}
)
HEADERS = MappingProxyType(
    {
        "profile": "## User profile",
        "memories": "## Relevant memories",
        "summaries": "## Earlier sessions",
        "skills": "## Skills",
        "recent": "## Recent messages",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextBundle:
    """The packed sections and their cost.

    `used_tokens` is the sum of the counts of the rendered headers and items: the count of
    `render_text(bundle)` for the counters in `retrieval.tokens` (additive over whitespace),
    an upper bound of it for any counter that keeps the contract there. Never above
    `budget_tokens`.
    """

    profile: tuple[ProfileItem, ...] = ()
    memories: tuple[MemoryItem, ...] = ()
    summaries: tuple[SummaryItem, ...] = ()
    skills: tuple[SkillItem, ...] = ()
    recent: tuple[RecentMessage, ...] = ()
    budget_tokens: int = 0
    used_tokens: int = 0
    # how many offered items of each section did not fit
    dropped: Mapping[str, int] = field(default_factory=dict)

    def section(self, name: str) -> tuple[Item, ...]:
        items: tuple[Item, ...] = getattr(self, name)
        return items


def render_text(bundle: ContextBundle) -> str:
    """The bundle as prompt text: a header per non-empty section, one item per line."""
    blocks = []
    for name in SECTIONS:
        items = bundle.section(name)
        if items:
            blocks.append("\n".join([HEADERS[name], *map(render_item, items)]))
    return "\n\n".join(blocks)


def to_json(bundle: ContextBundle) -> dict[str, Any]:
    """The bundle as JSON-ready data (datetimes as ISO 8601, floats to 6 decimals)."""
    plain: dict[str, Any] = orjson.loads(dumps(bundle))
    return plain


def dumps(value: Any) -> bytes:
    """``value`` as JSON: a bundle (or any value holding one) in the form of `to_json`.

    orjson writes the containers, strings and datetimes; each dataclass passes through
    `_fields`, which rounds the floats among its fields and in its flat mappings (an
    item's explain) to 6 decimals.
    """
    return orjson.dumps(value, default=_fields, option=orjson.OPT_PASSTHROUGH_DATACLASS)


def _fields(value: object) -> dict[str, Any]:
    kind: type = type(value)
    names = _field_names(kind)
    if names is None:
        raise TypeError(f"{kind.__name__} is not JSON serializable")
    return {name: _rounded(getattr(value, name)) for name in names}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, Mapping):
        return {str(k): round(v, 6) if isinstance(v, float) else v for k, v in value.items()}
    return value


@cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of a dataclass, in order; None for any other type."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(f.name for f in dataclasses.fields(cls))


def pack(
    *,
    profile: Sequence[ProfileItem] = (),
    memories: Sequence[MemoryItem] = (),
    summaries: Sequence[SummaryItem] = (),
    skills: Sequence[SkillItem] = (),
    recent: Sequence[RecentMessage] = (),
    budget_tokens: int,
    counter: TokenCounter,
    shares: Mapping[str, float] = DEFAULT_SHARES,
) -> ContextBundle:
    """The sections packed under `budget_tokens` as `counter` counts the rendered text.

    Items of each section are given best first, except `recent`, given oldest first (it is
    filled newest first and rendered in time order).
    """
    if budget_tokens < 0:
        raise ValueError("budget_tokens must be >= 0")
    if set(shares) - set(SECTIONS) or min(shares.values(), default=0) < 0:
        raise ValueError(f"section shares must be >= 0 and name only {SECTIONS}")
    if sum(shares.values()) > 1 + 1e-9:
        raise ValueError("section shares must sum to at most 1")
    fills = (
        p := _Fill("profile", profile, counter),
        m := _Fill("memories", memories, counter),
        su := _Fill("summaries", summaries, counter),
        sk := _Fill("skills", skills, counter),
        r := _Fill("recent", recent, counter),
    )
    carry = 0
    for f in fills:  # each section's own share, plus what earlier ones left
        allowance = math.floor(shares.get(f.name, 0.0) * budget_tokens) + carry
        carry = allowance - f.fill(allowance)
    for f in fills:  # then whatever is left, in priority order
        f.fill(budget_tokens - sum(g.spent for g in fills))
    return ContextBundle(
        profile=p.taken(),
        memories=m.taken(),
        summaries=su.taken(),
        skills=sk.taken(),
        recent=r.taken(),
        budget_tokens=budget_tokens,
        used_tokens=sum(f.spent for f in fills),
        dropped={f.name: len(f.items) - len(f.chosen) for f in fills},
    )


class _Fill(Generic[T]):
    """One section being filled: which items it took and the tokens they cost."""

    def __init__(self, name: str, items: Sequence[T], counter: TokenCounter) -> None:
        self.name = name
        self.items: Sequence[T] = items
        self.counter = counter
        self.header = counter(HEADERS[name])
        # priority order: best first, but the newest first for recent messages
        self.order = range(len(items) - 1, -1, -1) if name == "recent" else range(len(items))
        self.costs: dict[int, int] = {}
        self.chosen: set[int] = set()
        self.spent = 0

    def fill(self, allowance: int) -> int:
        """Take every not-yet-taken item that still fits in `allowance`; tokens spent."""
        spent = 0
        for index in self.order:
            if spent >= allowance:
                break
            if index not in self.chosen:
                cost = self._cost(index) + (0 if self.chosen else self.header)
                if spent + cost <= allowance:
                    self.chosen.add(index)
                    spent += cost
        self.spent += spent
        return spent

    def _cost(self, index: int) -> int:
        if index not in self.costs:
            self.costs[index] = self.counter(render_item(self.items[index]))
        return self.costs[index]

    def taken(self) -> tuple[T, ...]:
        return tuple(self.items[i] for i in sorted(self.chosen))
