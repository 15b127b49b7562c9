"""What a task teaches without whose task it was: goals as templates, arguments and errors
with the conversation's values replaced by their slots."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from observations.extract.procedures import (
    argument_values,
    error_text,
    generalize,
    generalize_args,
    generalize_error,
    slot_name,
    strip_chat,
)

AT = datetime(2025, 3, 7, 18, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("request_text", "calls", "people", "template"),
    [
        (
            "book a table for 2 tmrw 8pm somewhere italian in kraków",
            [{"city": "Kraków", "cuisine": "italian", "party": 2, "time": "20:00"}],
            ["Nina Kowalski"],
            "book a table for {party} {date} {time} somewhere {cuisine} in {city}",
        ),
        (
            "pay Oskar's landlord 2100 pln rent, iban PL61109010140000071219812874",
            [{"iban": "PL61109010140000071219812874", "amount": 2100}],
            ["Oskar Wiśniewski"],
            "pay {person}'s landlord {amount} rent, iban {iban}",
        ),
        (
            "send the deck to ana@example.com and https://x.io/a before friday",
            [],
            [],
            "send the deck to {email} and {url} before {date}",
        ),
        (
            "share wedding_photos.zip with Hugo Marchand's mum",
            [{"file": "wedding_photos.zip"}],
            [],
            "share {file} with {name}'s mum",
        ),
        ("get me a ride from berghain at 4", [{"pickup": "Berghain, Berlin"}], [],
         "get me a ride from {pickup} at {time}"),
        ("same report for q1 2025", [], [], "same report for {date}"),
        ("reserve a sun lounger by the pool", [], [], "reserve a sun lounger by the pool"),
        ("ticket ABC-12345 open, 3rd time", [], [], "ticket {id} open, {number} time"),
        ("what's the weather in portland next weekend", [{"city": "Portland"}], [],
         "what's the weather in {city} {date}"),
    ],
)  # fmt: skip
def test_a_request_becomes_a_template(
    request_text: str, calls: list[dict[str, Any]], people: list[str], template: str
) -> None:
    values = argument_values(calls)
    assert generalize(request_text, anchor=AT, values=values, people=people) == template


def test_only_constants_of_the_procedure_keep_their_value() -> None:
    args = {
        "to": "docx",
        "provider": "google",
        "all_day": True,
        "needs": ["screen"],
        "file": "contract.pdf",
        "n": 3,
        "title": "Team offsite",
        "query": "select region, sum(total) from orders group by region",
        "cuisine": "italian",
    }
    assert generalize_args(args, "somewhere italian, convert contract.pdf pls") == {
        "to": "docx",
        "provider": "google",
        "all_day": True,
        "needs": ["screen"],
        "file": "{file}",
        "n": "{value}",
        "title": "{title}",
        "query": "{query}",
        "cuisine": "{cuisine}",  # said in the request: this user's choice
    }


def test_a_credential_argument_is_a_slot_however_plain_its_value() -> None:
    args = {"password": "hunter", "pin": "abcd", "api_key": "live", "passengers": "two"}
    assert generalize_args(args, "") == {
        "password": "{password}",
        "pin": "{pin}",
        "api_key": "{api_key}",
        "passengers": "two",
    }


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ('{"ok": false, "error": "403: region not supported"}', "403: region not supported"),
        ('{"error": {"code": 5, "message": "bad key"}}', "bad key"),
        ('{"detail": "rate limited"}', "rate limited"),
        ("Traceback (last call): KeyError", "Traceback (last call): KeyError"),
        ('{"ok": false}', '{"ok": false}'),
        ("{not json", "{not json"),
    ],
)  # fmt: skip
def test_a_tool_error_is_its_message_as_text(content: str, text: str) -> None:
    assert error_text(content) == text


def test_an_error_names_the_slot_of_a_value_of_the_conversation() -> None:
    values = argument_values([{"city": "Portland", "days": 3}])
    error = "ambiguous location: 'Portland' matches 2 places, pass lat/lon"
    assert generalize_error(error, values) == (
        "ambiguous location: '{city}' matches 2 places, pass lat/lon"
    )


def test_slot_names_and_trailing_chat() -> None:
    assert [slot_name(k) for k in ("toCity", "q", "file-id", "2x")] == [
        "to_city", "value", "file_id", "value",
    ]  # fmt: skip
    assert strip_chat("ride home again pls lol") == "ride home"
    assert strip_chat("book it please!") == "book it"
