"""The key scheme of heuristic observations.

A key names *what a statement is about* for its owner, so that later statements about the
same thing land on the same key (the ``user_profile`` read model is keyed by it: a newer
value on the same key supersedes the older one). Keys are lower-case, parts joined by ":"
and words inside a part by "-", nouns in the singular.

User facts (owner = the user):

* ``preference:<topic>`` — the topic of a like/dislike. A named category wins: "my favorite
  drink is …", "my preferred drink …", "I like to drink …", "I love drinking …" all give
  ``preference:drink`` (likewise eating → ``food``, listening to → ``music``). An activity
  gives its -ing form ("I like to paint", "I love painting" → ``preference:painting``);
  generic activities give their object ("playing guitar" → ``preference:guitar``,
  "watching movies" → ``preference:movie``). Otherwise the head noun of the object ("I
  love the beach" → ``preference:beach``; "window seats" and "aisle seats" →
  ``preference:seat``, so the later one supersedes the earlier). Liking and hating the same thing
  share the key; ``fields["polarity"]`` tells them apart.
* ``relationship:<role>`` for roles one has once (wife, husband, partner, mother, father,
  parents, family, boss…); ``relationship:<role>:<name>`` for the others when a name is
  given ("my friend Bob" → ``relationship:friend:bob``), else ``relationship:<role>``.
  Roles are normalised (mom/mum → mother, kids/children → child, puppy → dog).
* ``skill:<topic>`` — like preferences, keeping the first word of a specific activity's
  object ("I can paint", "I'm good at painting" → ``skill:painting``; "I know how to fix
  bikes", "I'm good at fixing bikes" → ``skill:fixing-bike``; "I play the guitar" →
  ``skill:guitar``; "I speak French" → ``skill:french``).
* ``goal:<slug>`` — up to three content words of what is wanted ("I plan to continue my
  education" → ``goal:continue-education``).
* ``constraint:allergy:<thing>``, ``constraint:diet`` (vegan, vegetarian…),
  ``constraint:diet:<thing>`` ("I don't eat meat"), ``constraint:budget``, else
  ``constraint:<slug>`` ("I can't drive" → ``constraint:drive``).
* ``identity:<attribute>`` with attribute one of name, occupation, employer, origin,
  location, age, gender, orientation, relationship-status, education, pronouns, parent.
* ``experience:<slug>`` — an undated past activity ("I tried sushi" → ``experience:sushi``).
* ``event:<iso date>:<slug>`` — a dated happening, past or planned ("I got married last
  May" said in 2023 → ``event:2022-05:married``); the date keeps two occurrences apart.

Other items:

* ``episodic:<event id>`` — a turn's restatement (owner = the speaker).
* ``agent_experience:<skill key>`` — one tool-using task of an agent; the stable part is
  ``fields["skill_key"]`` (``<verb>-<object>`` of the request, e.g. ``book-flight``, else
  ``tools:<tool>+<tool>``), shared by every recurrence of the same kind of task. A second
  task with the same skill key in one session gets ``:2``, a third ``:3``.
* ``summary:<session id>`` — the session summary (owner = the channel).
"""

from __future__ import annotations

import re

from observations.extract.lexicon import GENERIC_ACTIVITIES, UNIQUE_ROLES
from observations.extract.text import FUNCTION_WORDS, content_words, gerund, singular, slug

_ROLE_ALIASES = {
    "mom": "mother",
    "mum": "mother",
    "mama": "mother",
    "dad": "father",
    "papa": "father",
    "kid": "child",
    "kids": "child",
    "children": "child",
    "baby": "child",
    "hubby": "husband",
    "fiancee": "fiance",
    "fiancé": "fiance",
    "fiancée": "fiance",
    "grandma": "grandmother",
    "granny": "grandmother",
    "grandpa": "grandfather",
    "auntie": "aunt",
    "pup": "dog",
    "pups": "dog",
    "puppy": "dog",
    "puppies": "dog",
    "bff": "best-friend",
    "bestie": "best-friend",
    "best friend": "best-friend",
    "coworker": "colleague",
    "co-worker": "colleague",
    "neighbour": "neighbor",
    "sibling": "sibling",
    "parents": "parents",
    "grandparents": "grandparents",
    "in-laws": "in-laws",
}
_CATEGORY_OF_ACTIVITY = {"drinking": "drink", "eating": "food", "listening": "music"}
_CATEGORY_WORDS = frozenset({"thing", "one", "part", "kind", "type", "sort"})


def role(word: str) -> str:
    """The normalised relationship role: "Mom" → "mother", "sisters" → "sister"."""
    lowered = " ".join(word.lower().split())
    if lowered in _ROLE_ALIASES:
        return _ROLE_ALIASES[lowered]
    return singular(lowered).replace(" ", "-")


def relationship_key(role_word: str, name: str | None) -> str:
    normalized = role(role_word)
    if name and normalized not in UNIQUE_ROLES:
        return f"relationship:{normalized}:{slug(name, 2)}"
    return f"relationship:{normalized}"


def topic(phrase: str, verbal: bool = False, with_object: bool = False) -> str:
    """The topic of a liked/known thing; ``verbal`` when the phrase starts with a verb.

    ``with_object`` keeps the first content word after a specific activity ("baking
    bread" → "baking-bread" rather than "baking"), as skills use it.
    """
    tokens = phrase.lower().replace("’", "'").split()
    if tokens and tokens[0] == "to" and len(tokens) > 1:
        tokens, verbal = tokens[1:], True
    if not tokens:
        return "general"
    first = tokens[0]
    if verbal or first.endswith("ing"):
        activity = gerund(first) if verbal else first
        if activity in _CATEGORY_OF_ACTIVITY:
            return _CATEGORY_OF_ACTIVITY[activity]
        rest = " ".join(tokens[1:])
        if activity in GENERIC_ACTIVITIES or activity in ("speaking", "being"):
            return slug(rest, 2) if content_words(rest) else activity
        if with_object and content_words(rest, FUNCTION_WORDS):
            return f"{activity}-{slug(rest, 1)}"
        return activity
    return head_noun(phrase)


_PHRASE_END = re.compile(
    r"\s(?:on|in|at|for|with|when|because|so|but|and|or|if|since|from|to|of|that|which|"
    r"who|while|as|over|than)\s|[,;:.!?]",
    re.IGNORECASE,
)


def head_noun(phrase: str) -> str:
    """The head of a noun phrase: its last content word before a preposition or clause
    ("window seats when I fly" → "seat", "strong black coffee" → "coffee"), so that
    "window seats" and "aisle seats" are two values of one key."""
    words = content_words(_PHRASE_END.split(f" {phrase} ", maxsplit=1)[0], FUNCTION_WORDS)
    return singular(words[-1].replace("'", "")) if words else slug(phrase, 2)


def category(word: str, obj: str) -> str:
    """The key topic for "my favorite <word> is <obj>"."""
    lowered = word.lower()
    if lowered in _CATEGORY_WORDS:
        return topic(obj)
    return singular(lowered)
