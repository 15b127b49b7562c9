"""The deterministic ``heuristic`` extractor: a linguistic analysis, no network, no database.

For one closed session it produces, in this order:

1. user fact atoms of the eight kinds, one per clause of the users' sentences, read off
   spaCy's parse (:mod:`.user_facts`, :mod:`.atoms`, rules and keys in :mod:`.rules`),
   filed under the person each is about, with names for pronouns and dates resolved
   against each event's ``occurred_at`` (:mod:`.dates`); when one person's fact has the
   same key twice in a session the later statement wins, unless it only restates the
   same thing more weakly ("I know how to swim", then "I can swim"): then the stronger
   statement stays;
2. the episodic record of every substantive user turn — what was said, by whom, to whom
   (:mod:`.episodic`) — beside the facts read from it;
3. agent experiences from tool_call/tool_result sequences (:mod:`.experiences`, event
   shapes in :mod:`.tools`);
4. one extractive session summary (:mod:`.summary`).

Every item's provenance is the specific events it came from. Same input, same output.
"""

from __future__ import annotations

import re

from observations.extract.base import Extracted, Extraction, SessionInput
from observations.extract.calibration import calibrated
from observations.extract.episodic import MIN_CONTENT_WORDS, extract_episodic
from observations.extract.experiences import extract_experiences
from observations.extract.summary import summarize
from observations.extract.turns import build_turns
from observations.extract.user_facts import FactHit, extract_facts, names_given

_WORD = re.compile(r"\w+")


def latest_per_key(hits: list[FactHit]) -> list[FactHit]:
    """One fact per (owner, key): the last one stated, kept at its place in the session,
    except that a weaker restatement of the kept fact does not displace it (it would be
    gated out where the stronger statement passes, and the fact would be lost), nor does a
    friend's claim displace what its subject said of themself."""
    kept: dict[tuple[str, str, str], int] = {}
    for position, hit in enumerate(hits):
        slot = (hit.item.owner_type, hit.item.owner_id, hit.item.key)
        earlier = kept.get(slot)
        if earlier is None or not _stays(hits[earlier].item, hit.item):
            kept[slot] = position
    keep = set(kept.values())
    return [hit for position, hit in enumerate(hits) if position in keep]


def _stays(earlier: Extracted, later: Extracted) -> bool:
    hearsay = "said_by" in later.fields and "said_by" not in earlier.fields
    return hearsay or _weaker_restatement(later, earlier)


def _weaker_restatement(later: Extracted, earlier: Extracted) -> bool:
    """``later`` is less confident than ``earlier`` and says no more of the same key: the
    words of its object are all among the earlier one's ("chess" after "play chess"; not
    "green tea" after "tea", which says more)."""
    if later.confidence >= earlier.confidence:
        return False
    words = _object_words(later)
    return bool(words) and words <= _object_words(earlier)


def _object_words(item: Extracted) -> set[str]:
    return set(_WORD.findall(str(item.fields.get("object", "")).casefold()))


class HeuristicExtractor:
    """Implements the ``Extractor`` protocol without any model."""

    name = "heuristic"
    version = "79"
    reads_beliefs = False

    def __init__(self, min_episodic_words: int = MIN_CONTENT_WORDS) -> None:
        self.min_episodic_words = min_episodic_words

    def extract(self, session: SessionInput) -> Extraction:
        turns = build_turns(session)
        facts = extract_facts(turns, session.known_names)
        items: list[Extracted] = [calibrated(hit.item) for hit in latest_per_key(facts)]
        names = names_given(items, session.known_names)
        items.extend(extract_episodic(turns, self.min_episodic_words))
        ordered = sorted(session.events, key=lambda e: (e.seq, e.id))
        items.extend(extract_experiences(ordered))
        summary = summarize(session, turns, names)
        if summary is not None:
            items.append(summary)
        return Extraction(items=tuple(items), extractor=self.name, version=self.version)
