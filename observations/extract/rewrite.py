"""Make a chat sentence self-contained: names instead of pronouns, absolute dates.

"I went there yesterday with my sister" said by Caroline on 8 May 2023 becomes
"Caroline went there on 7 May 2023 with Caroline's sister". First person singular becomes
the speaker's name (a base verb after it moves to the third person: "I love" →
"Caroline loves"), first person plural becomes "<speaker> and others", and second person
becomes the addressee's name when one is known (the participant the turn answers).
"""

from __future__ import annotations

import re
from datetime import datetime

from observations.extract.dates import ResolvedDate, rewrite_dates
from observations.extract.inflect import IRREGULAR
from observations.extract.inflect import third_person as inflected
from observations.extract.lexicon import ADVERBS, NOT_BASE_VERBS, wordset

_HAD_AFTER = frozenset({"been", "better", "gone", "done", "had", "seen", "never", "already"})
_SUBJECT_CONTEXT = re.compile(
    r"(?:^|[,.;:!?(\"“]\s*|\b(?:and|but|so|that|if|when|because|since|as|or|while|what|"
    r"how|where|why|though|unless|whether|until|before|after|hope|think|guess|bet|know|once"
    r"|sure|cause|then|whenever|wherever|believe|wish)\s+)$",
    re.IGNORECASE,
)
_AUXILIARY_BEFORE = re.compile(
    r"\b(?:did|didn['’]t|do|does|can|could|will|would|should|shall|may|might|must|let|make"
    r"|help|watch|see|hear|made)\s+$",
    re.IGNORECASE,
)
_TOKEN = re.compile(
    r"\b(?P<inv>[Aa]m|[Aa]re|[Dd]o|[Dd]on't|[Hh]ave|[Hh]aven't|[Ww]ere)\s+(?P<invpro>I|you)\b"
    r"(?!['’])"
    r"|\b(?P<pro>I|i|[Yy]ou|[Ww]e)['’](?P<cont>m|ve|ll|d|re)\b"
    r"|(?<!-)\b(?P<word>I|i|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Uu]s|[Oo]ur|[Oo]urs"
    r"|[Oo]urselves|[Yy]ou|[Yy]our|[Yy]ours|[Yy]ourself)\b(?!['’-]\w|\.\w)"
)
_NEXT_WORD = re.compile(r"\s+([A-Za-z'’]+)")
_MARK = "\u0001"
_AGREEMENT = re.compile(
    rf"{_MARK}(?P<name>[^{_MARK}]+){_MARK}"
    rf"(?P<adv>(?:\s+(?:{'|'.join(sorted(ADVERBS))}))*)\s+(?P<verb>[a-z][a-z'’]*)\b"
)


# verbs that end like an adverb ("I fly" is "Maya flies", "I really" stays "Maya really")
_LY_VERBS = wordset("fly apply rely reply supply comply imply multiply ally bully rally tally")


def third_person(verb: str) -> str:
    """The third-person singular of a base verb: "love" → "loves", "try" → "tries"; a
    word that is no base verb ("went", "can", "and") stays."""
    lower = verb.lower().replace("’", "'")
    adverb = lower.endswith("ly") and lower not in _LY_VERBS
    if adverb or (lower in NOT_BASE_VERBS and lower not in IRREGULAR):
        return verb  # an adverb ("really"), a modal or a past form
    return inflected(verb)


class PersonRewriter:
    """Rewrites pronouns in sentences said by ``speaker`` to ``addressee``."""

    def __init__(self, speaker: str, addressee: str | None) -> None:
        self.speaker = speaker
        self.addressee = addressee

    def rewrite(self, text: str) -> str:
        marked = _TOKEN.sub(self._replace, text)
        return _AGREEMENT.sub(_agree, marked).replace(_MARK, "")

    def _name_for(self, pronoun: str) -> str | None:
        lower = pronoun.lower()
        if lower in ("i", "me", "my", "mine", "myself"):
            return self.speaker
        if lower in ("we", "us", "our", "ours", "ourselves"):
            return f"{self.speaker} and others"
        return self.addressee

    def _replace(self, m: re.Match[str]) -> str:
        if m["inv"]:
            return self._inverted(m)
        if m["pro"]:
            return self._contracted(m)
        return self._word(m)

    def _inverted(self, m: re.Match[str]) -> str:
        """Question word order: "do you" → "does Melanie", "am I" → "is Caroline"."""
        name = self._name_for(m["invpro"])
        if name is None:
            return m.group(0)
        verb = third_person(m["inv"].lower())
        if m["inv"][:1].isupper():
            verb = verb[:1].upper() + verb[1:]
        return f"{verb} {name}"

    def _contracted(self, m: re.Match[str]) -> str:
        name = self._name_for(m["pro"])
        if name is None:
            return m.group(0)
        cont = m["cont"].lower()
        if cont == "d":
            following = _NEXT_WORD.match(m.string, m.end())
            nxt = following.group(1).lower() if following else ""
            return f"{name} {'had' if nxt in _HAD_AFTER or nxt.endswith('ed') else 'would'}"
        plural = m["pro"].lower() == "we"
        verbs = {"m": "is", "ve": "have" if plural else "has", "ll": "will"}
        return f"{name} {verbs.get(cont, 'are' if plural else 'is')}"

    def _word(self, m: re.Match[str]) -> str:
        word = m["word"]
        lower = word.lower()
        name = self._name_for(word)
        if name is None:
            return word
        if lower in ("our", "ours"):
            return f"{self.speaker}'s"
        if lower in ("my", "mine", "your", "yours"):
            return f"{name}'s"
        if lower in ("myself", "yourself"):
            return "themself"
        if lower == "ourselves":
            return "themselves"
        before = m.string[: m.start()]
        if _AUXILIARY_BEFORE.search(before):
            return name
        singular_subject = lower == "i" or (
            lower == "you" and _SUBJECT_CONTEXT.search(before) is not None
        )
        return f"{_MARK}{name}{_MARK}" if singular_subject else name


def _agree(m: re.Match[str]) -> str:
    return f"{m['name']}{m['adv']} {third_person(m['verb'])}"


def render(
    text: str, speaker: str, addressee: str | None, anchor: datetime
) -> tuple[str, tuple[ResolvedDate, ...]]:
    """``text`` with absolute dates and names instead of pronouns, plus the dates found."""
    dated, found = rewrite_dates(text, anchor)
    return rewrite_persons(dated, speaker, addressee), found


def rewrite_persons(text: str, speaker: str, addressee: str | None) -> str:
    """``text`` said by ``speaker`` to ``addressee`` with names instead of pronouns."""
    return PersonRewriter(speaker, addressee).rewrite(text)
