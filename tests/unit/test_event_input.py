"""Event input: the quick path for plain events takes only what the model takes, and
builds the same event; an id is usable exactly when the id pattern matches it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ledger.errors import InvalidEvent
from ledger.events import DEFAULT_LIMITS, EventIn, _quick, parse_events
from ledger.scope import ID, usable_id

NOW = datetime(2025, 10, 7, tzinfo=UTC)
PLAIN = {
    "external_id": "m-1",
    "channel_id": "dm-1",
    "role": "user",
    "actor_id": "u-1",
    "actor_name": "Ana",
    "content": "I moved to Lisbon.",
    "occurred_at": datetime(2025, 10, 6, 9, tzinfo=UTC),
    "metadata": {"client": "web"},
}
# texts near each rule of the model's: blank, NUL, a lone surrogate, controls, spaces
# around an id, non-ASCII, lengths at the limits
NEAR = ["", " ", "\t", "a", " a", "a ", "a\x00b", "\ud800", "é", "名前", "a\nb", "\x7f",
        "a\u2028", "\xa0a", "x" * 128, "x" * 129, "x" * 256, "x" * 257]  # fmt: skip
TEXTS = st.one_of(st.sampled_from(NEAR), st.text(max_size=12))
ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-16)),
         timezone(timedelta(seconds=1, microseconds=5))]  # fmt: skip
TIMES = st.one_of(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from(ZONES),
    ),
    st.datetimes(),  # naive
    st.sampled_from(["2025-10-06T09:00:00+02:00", "2025-10-06T09:00:00", "yesterday", ""]),
)
FIELDS = {
    "external_id": TEXTS,
    "channel_id": TEXTS,
    "role": st.sampled_from(["user", "assistant", "tool_call", "boss", 3]),
    "actor_id": TEXTS,
    "actor_name": st.one_of(st.none(), TEXTS),
    "content": TEXTS,
    "occurred_at": TIMES,
    "metadata": st.one_of(
        st.dictionaries(st.one_of(TEXTS, st.integers()), st.one_of(TEXTS, st.integers())),
        st.lists(st.integers(), max_size=1),
    ),
}


@st.composite
def events(draw: st.DrawFn) -> Any:
    """A plain event with one or two fields drawn near the rules, maybe a field missing
    or one too many."""
    event = dict(PLAIN)
    for name in draw(st.sets(st.sampled_from(list(FIELDS)), min_size=1, max_size=2)):
        event[name] = draw(FIELDS[name])
    for name in draw(st.sets(st.sampled_from([*FIELDS, "extra"]), max_size=1)):
        if name in event:
            del event[name]
        else:
            event[name] = 1
    return event


@settings(max_examples=1500)
@given(events())
def test_the_quick_path_takes_only_what_the_model_takes_and_builds_the_same_event(
    item: dict[str, Any],
) -> None:
    quick = _quick(item)
    try:
        model = EventIn.model_validate(item)
    except ValidationError:
        assert quick is None
        return
    if quick is not None:
        assert quick == model
        assert quick.model_dump() == model.model_dump()
        assert quick.model_fields_set == model.model_fields_set | {"actor_name", "metadata"}


def test_a_plain_event_takes_the_quick_path_and_a_bad_one_is_named_by_the_model() -> None:
    assert _quick(PLAIN) == EventIn.model_validate(PLAIN)
    assert _quick({**PLAIN, "occurred_at": "2025-10-06T09:00:00+00:00"}) is not None
    with pytest.raises(InvalidEvent) as caught:
        parse_events([PLAIN, {**PLAIN, "channel_id": " dm"}], now=NOW, limits=DEFAULT_LIMITS)
    assert caught.value.index == 1 and caught.value.field == "channel_id"


@settings(max_examples=2000)
@given(
    st.one_of(
        st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=130),
        st.text(max_size=12),
        st.sampled_from(["", " ", "a", " a", "a ", "x" * 128, "x" * 129, "a\x7fb", "\xa0a"]),
    )
)
def test_a_usable_id_is_what_the_id_pattern_matches(value: str) -> None:
    assert usable_id(value) == (ID.match(value) is not None)
