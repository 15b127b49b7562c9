"""What a tool-using task teaches, without whose task it was.

An agent's skill is offered to every user the agent serves, so what it is made of (the
goal, the steps, the failures) keeps the procedure and drops the person. The values a
request and its tool calls carry become named slots:

* a value that is also an argument of a call takes the argument's name: "book a table
  for 2 in kraków" with ``resy_search(city="Kraków", party=2)`` → "book a table for
  {party} in {city}" (a value such as "Berghain, Berlin" also matches by its first part);
* dates ("tmrw", "on saturday", "next month", "4 December", "2024", "q1"): ``{date}``;
  clock times ("8pm", "15:30", "at 4"): ``{time}``;
* the participants' names: ``{person}`` ("{person}'s mum"); other capitalized names
  (of people, places, things: the text alone cannot tell): ``{name}``; amounts with a currency:
  ``{amount}``; file names, e-mail addresses, links: ``{file}``, ``{email}``, ``{url}``;
  anything else with a digit in it (ids, numbers, codes): ``{id}`` or ``{number}``.

A call's argument keeps its value only when the value is a plain constant of the
procedure (a short lowercase word or a flag: ``to="docx"``, ``provider="google"``) and
the argument is no credential (``password``, ``pin``, ``token``, ``api_key``…); a
number, a name, a date, anything long, or anything said in the conversation ("aisle",
which the user prefers) is the argument's slot. A
tool's error is its message as text (``{"ok": false, "error": "403: …"}`` → "403: …"),
with the request's values in it replaced by their slots.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from observations.extract.dates import find_dates
from observations.extract.text import names

_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DAY_WORDS = re.compile(
    rf"\b(?:(?:on|this|next|last|by)\s+)?(?:(?:{_WEEKDAYS})s?|mon|tue|tues|thu|thurs|fri"
    r"|today|tonight|tomorrow|tmrw|tmr|tmw|yesterday|weekend)\b",
    re.IGNORECASE,
)
_TIME = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w)|\b\d{1,2}:\d{2}\b|(?<=\bat )\d{1,2}\b",
    re.IGNORECASE,
)
_PERIOD = re.compile(r"\b(?:q[1-4]\s+)?(?:19|20)\d{2}\b|\bq[1-4]\b", re.IGNORECASE)
_AMOUNT = re.compile(
    r"(?:[$€£]\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:k\b)?\s*(?:pln|eur|euros?|usd|dollars?|gbp|pounds?"
    r"|chf|sek|nok|dkk|czk|jpy|yen|bucks)\b|\b\d[\d,.]*\s?[€£$])",
    re.IGNORECASE,
)
_FILE = re.compile(
    r"\b[\w\-]+\.(?:pdf|docx?|xlsx?|csv|pptx?|zip|txt|json|png|jpe?g|gif|mp[34]|mov|md)\b", re.I
)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b")
_URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+", re.IGNORECASE)
_DIGITS = re.compile(r"[^\s,;:()\"']*\d[^\s,;:()\"']*")
_TRAILING_CHAT = re.compile(
    r"(?:[\s,]+(?:pls|plz|please|thx|thanks|ty|lol|lmao|haha+|asap|again|ok|okay)\b[!.?]*)+\s*$",
    re.IGNORECASE,
)
_SPACES = re.compile(r"\s+")
SLOT = re.compile(r"\{[a-z_]+\}")  # a slot of a template: "{city}"
_CONSTANT = re.compile(r"^[a-z][a-z_\-]{0,15}$")
_ERROR_KEYS = ("error", "message", "detail", "reason", "msg", "description")


def fold(text: str) -> str:
    """``text`` lower-cased without accents, one character for each of ``text``'s (so
    positions in one are positions in the other)."""
    return "".join(
        (unicodedata.normalize("NFKD", ch)[:1] or ch).lower() if len(ch.lower()) == 1 else ch
        for ch in text
    )


def slot_name(key: str) -> str:
    """An argument's name as a slot name: ``toCity`` → ``to_city``; one letter → value."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).lower()
    name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    return name if len(name) > 1 and not name[0].isdigit() else "value"


def argument_values(calls: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each value the calls pass (folded) → its slot; the first call naming a value wins.
    A value like "Berghain, Berlin" is also known by its first part."""
    known: dict[str, str] = {}
    for args in calls:
        for key, value in args.items():
            for text in _texts(value):
                for form in (text, text.split(",")[0]):
                    form = fold(form.strip())
                    if len(form) >= 3 or _has_digit(form):
                        known.setdefault(form, slot_name(key))
    return known


def _texts(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float | str):
        return [str(value)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v)]
    return []


def _has_digit(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def generalize(
    text: str, *, anchor: datetime, values: Mapping[str, str], people: Iterable[str] = ()
) -> str:
    """``text`` with every value of one conversation replaced by its slot (see the module
    docstring); ``values``: :func:`argument_values` of the task's calls; ``people``: the
    names of the conversation's participants."""
    folded = fold(text)
    spans = _value_spans(folded, values)
    spans += [(*found.span, "date") for found in find_dates(text, anchor)]
    for pattern, slot in (
        (_URL, "url"), (_EMAIL, "email"), (_FILE, "file"), (_AMOUNT, "amount"),
        (_TIME, "time"), (_DAY_WORDS, "date"), (_PERIOD, "date"),
    ):  # fmt: skip
        spans += [(m.start(), m.end(), slot) for m in pattern.finditer(text)]
    for slot, known in (("person", people), ("name", names(text))):
        for name in known:
            for part in {name, name.split()[0]}:
                spans += [(*at, slot) for at in _occurrences(fold(part), folded)]
    out = _replace(text, spans)
    out = _DIGITS.sub(
        lambda m: m.group(0) if SLOT.fullmatch(m.group(0)) else _number(m.group(0)), out
    )
    return _SPACES.sub(" ", out).strip()


def _occurrences(value: str, folded: str) -> list[tuple[int, int]]:
    """Where ``value`` (folded) stands as a whole word or phrase in ``folded``."""
    return [m.span() for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", folded)]


def _value_spans(folded: str, values: Mapping[str, str]) -> list[tuple[int, int, str]]:
    """The call values found in ``folded``, the longest first, each with its slot."""
    ordered = sorted(values.items(), key=lambda kv: -len(kv[0]))
    return [(*at, slot) for value, slot in ordered for at in _occurrences(value, folded)]


def _number(token: str) -> str:
    return "{number}" if re.fullmatch(r"[\d.,]+|\d+(?:st|nd|rd|th)", token, re.I) else "{id}"


def _replace(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with the spans replaced by their slots: the earliest, then longest, span
    wins where two overlap."""
    out, at = [], 0
    for start, end, slot in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
        if start < at:
            continue
        out += [text[at:start], "{" + slot + "}"]
        at = end
    out.append(text[at:])
    return "".join(out)


def strip_chat(goal: str) -> str:
    """A goal without trailing chat words ("…, pls", "… lol")."""
    return _TRAILING_CHAT.sub("", goal).rstrip(" ,;:-")


def generalize_args(args: Mapping[str, Any], said: str) -> dict[str, Any]:
    """A call's arguments with what belongs to one conversation replaced by the slot:
    only plain constants of the procedure that nobody said in the conversation (``said``:
    its messages) keep their value; a preference said earlier ("aisle") is the user's."""
    folded = fold(said)
    return {key: _argument(key, value, folded) for key, value in args.items()}


def _argument(key: str, value: Any, said: str) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: _argument(k, v, said) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_argument(key, v, said) for v in value]
    secret = _SECRET_ARGUMENT.search(key) is not None
    if isinstance(value, str) and _CONSTANT.match(value) and not secret and not _said(value, said):
        return value
    return "{" + slot_name(key) + "}"


# an argument whose value is a credential, whatever it looks like
_SECRET_ARGUMENT = re.compile(
    r"(?i)(?<![a-z])(?:pass(?:word|code|phrase)?|pin|cvv|cvc)(?![a-z])"
    r"|secret|token|api_?key|credential"
)


def _said(value: str, said: str) -> bool:
    return bool(_occurrences(fold(value), said))


def error_text(content: str) -> str:
    """A tool result's error as text: the message of a JSON error body, else the text."""
    body = _json(content.strip())
    message = _message(body) if body is not None else None
    return _SPACES.sub(" ", message if message else content).strip()


def _message(body: Any) -> str | None:
    if isinstance(body, str):
        return body
    if isinstance(body, Mapping):
        for key in _ERROR_KEYS:
            found = _message(body.get(key))
            if found:
                return found
    return None


def _json(text: str) -> Any:
    if not text.startswith(("{", "[", '"')):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def generalize_error(error: str, values: Mapping[str, str]) -> str:
    """An error message with the conversation's values in it replaced by their slots."""
    return _replace(error, _value_spans(fold(error), values))
