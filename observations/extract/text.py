"""Small text helpers shared by the heuristic extractor: sentences, words, slugs, names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from observations.extract.analysis import (
    inflected_verb,
    known_adjective,
    known_noun,
    known_verb,
    verb_before,
)
from observations.extract.date_periods import MONTHS
from observations.extract.lexicon import CHAT_WORDS, FUNCTION_WORDS, IE_NOUNS, OPENERS, wordset
from observations.extract.vocabulary import BODY_PARTS, HYPHENATED_WORDS, ROLES, WEEKDAYS

# a first or second person opening a sentence or the rest of one ("chloe i'm …")
PERSONAL_START = r"(?:i|i['’]m|im|i['’]ve|i['’]ll|i['’]d|you|you['’]re|u|we|we['’]re)\b"
_CHAT_BECAUSE_WORDS = "bc|bcuz|cuz|coz"  # chat's "because"

STOPWORDS = FUNCTION_WORDS | CHAT_WORDS
# letters of any script: "Zürich" is one word, and "日本語" and "Русский" are not nothing
_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['’-])*")
_SLUG_PART = 32  # characters of one key part at most (a run of CJK text is one "word")
# a sentence ends at a mark before a capital or a digit, and at "?" or "!" before anything
# (chat starts its sentences in lower case: "dinner sat? and heads up im allergic…") but
# "not", which puts right what the mark stressed ("midwife!! not a nurse")
_SENTENCE_END = re.compile(
    r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[?!])\s+(?!not\b)|\n+|\s+[-–—]+\s+|;\s+"
    # in lower-case chat, a first or second person subject starts one too ("my bad. i hate
    # flying", "fri to sun. also heads up i'm moving"); other lower-case words are left to
    # the parser, which reads a name better with the sentences around it ("my sister lena
    # lives in porto. my brother mo …")
    rf"|(?<=[.…])\s+(?=(?:(?:also|and|but|so|plus|oh|ok|btw|fyi|anyway|heads\s+up)[,:]?\s+)*"
    rf"{PERSONAL_START})"
    # a request after a comma is a question of its own ("going to montreal end of aug, any
    # tips for making the place look lived in")
    r"|,\s+(?=any\s+(?:tips|ideas|recs|recommendations|suggestions|advice|thoughts)\b)"
    # and any question opening with "any" after a comma ("doc put me on lisinopril 10mg for
    # blood pressure, any foods i should avoid?")
    r"|,\s+(?=any(?:thing|one|where)?\s[^,.!?]*\?)"
    # a question asked after a comma ("my salary is 140k, how much should i put in my 401k")
    r"|,\s+(?=(?:how|what|which|when|where|who|why)\s+(?:much|many|long|often|should|can"
    r"|could|would|do|does|did|is|are|was|were|will)\b)"
    # and a word or two offered after a comma ("its dani's birthday friday, cake?"); not
    # "or", a tag asking to confirm what came before ("…, right?") nor a request for ideas
    # about it ("ivy wants a dinosaur party, ideas?")
    r"|,\s+(?=(?!(?:or|right|yeah|yea|ya|yes|correct|no|innit|isn'?t|aren'?t|ideas?"
    r"|thoughts?|tips?|suggestions?|recs?|advice|help)\b)\w+(?:\s+\w+)?\?+\s*$)"
    # a stay said after a comma without its subject: "not in leeds anymore btw, been in
    # sheffield since june" says what "been in sheffield since june" says alone
    r"|(?:,|(?<=[.…]))\s+(?=been\s+in\s+\w+(?:\s+\w+)?\s+(?:since|for)\b)"
    # chat ends a sentence with emoji: "… the scholarship 🎉🎉 shes too humble to say it",
    # "…the japan trip in may 🙌 2 full weeks" (no "may 2")
    r"|(?<=[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f])\s+(?=[A-Za-z0-9])"
    # a number said after a comma with "it's" ("biking to work now, its 12 min"): chat's
    # "its" there is "it's", not the possessive the tagger reads ("…, its peanuts" stays,
    # a correction of what came before)
    r"|,\s+(?=it['’]?s\s+(?:like\s+|about\s+|only\s+|just\s+)?\d)"
    # a gloss after a comma ("i'm just lactose intolerant, cheese = bad time")
    r"|,\s+(?=[^\W\d_]+(?:\s+[^\W\d_]+)?\s*=\s)"
    # and with a laugh: "biking to work now, its 12 min lol my legs r dying"
    r"|(?:(?<=\blol)|(?<=\blmao)|(?<=\blmfao)|(?<=\brofl)|(?<=haha)|(?<=hehe))\s+(?=[A-Za-z])"
)
_ABBREVIATIONS = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|vs|etc|e\.g|i\.e|approx|a\.m|p\.m)\.$", re.I
)
_LEADING_FILLER = re.compile(
    r"^(?:(?:yeah|yes|yep|yup|oh|ooh|well|so|wow|haha+|lol|hey|hi|hello|aww*|ok|okay|"
    r"hmm+|um+|ah+|omg|sure|totally|absolutely|definitely|agreed|true|right|honestly|"
    r"thanks|thank you|by the way|btw|actually|anyway|anyways|also|plus|ngl|fwiw|tbh"
    r"|oh well|oh and|and|but|fyi|nope|nah|ugh|ya|yea|welp|lmao|update|so yeah|it['’]?s official"
    rf"|guys|y'all|yall|fam|heads up|because|{_CHAT_BECAUSE_WORDS}|omw"
    r"|(?:hang on|hold on|wait)(?=[,!.:]|\s+(?:i|i'm|im|its|it's|no|that)\b)"
    r"|(?:reminder|psa)(?=\s+(?:i|i'm|im|i've|ive|my|we|we're|our)\b))\b[,!.:]*\s+"
    r"|(?:everyone|everybody|folks|team|news|big news|good news|psa|reminder|life update"
    r"|quick update|(?:brag|proud|fun|random) moment|fun fact|brag)[,!:]+\s+)+",
    re.IGNORECASE,
)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,]+(?:(?:lol|lmao|rofl|haha+|hehe+|xd|tbh|ngl)\b|:\)|:d\b|;\)|:p\b|<3))+"
    r"(?=[\s!.?]*$)",
    re.IGNORECASE,
)
_ASIDE_WORDS = re.compile(
    r"(?:,\s*)?\b(?:fyi|btw|tbh|imo|imho|lol|lmao|ngl|for context)\b(?:\s*,)?", re.I
)
# "bc", "cuz" for "because": the parser reads only the word spelled out as a conjunction
_CHAT_BECAUSE = re.compile(rf"\b(?:{_CHAT_BECAUSE_WORDS})\b")
_PICTOGRAPHS = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f]+")
_REPEATED_MARKS = re.compile(r"([!?.])[!?.]+")
_CHAT_SPELLING = re.compile(r"\b(?:(?P<im>[Ii]m)|(?P<ive>[Ii]ve))\b")
# "ill", "id", "hell", "shell", "well" for "I'll", "I'd", "he'll", "she'll", "we'll" where
# a clause starts and a verb follows ("…, ill bring my lactaid", "hell go to happy
# tails"); not "feeling ill", "my id card", "well done"
_CHAT_WILL = re.compile(
    r"(?:^|(?<=[,;:.!?] )|(?<=\band )|(?<=\bso )|(?<=\bbut )|(?<=\bthen )|(?<=\bok ))"
    r"(?P<who>[Ii]|[Hh]e|[Ss]he|[Ww]e)(?P<will>ll|d) (?P<verb>[a-z]+)\b"
)
# contractions chat writes without the apostrophe, where no other word is spelled the same
_CHAT_CONTRACTIONS = re.compile(r"\b(?:([Hh]e|[Ss]he|[Tt]hat)(s)|([Yy]ou|[Tt]hey)(re))\b")
# "u" and "ur" for "you" and "your" / "you're" (capitalized only where a sentence starts:
# elsewhere "U" may be a letter)
_CHAT_YOU = re.compile(r"(?<![\w.'’-])(?P<word>[Uu]r?)(?![\w.'’-])(?=\s+(?P<next>[\w'’-]+))?")
# after "ur", what makes it "you're": an article, a participle or one of these words
_YOURE_BEFORE = wordset(
    """a an the so not too gonna going still always never welcome right wrong kidding
    joking allergic sick busy free lucky amazing awesome best worst sweet crazy funny
    such literally totally"""
)
# days as chat spells them, written out so that dates are read ("first week back tmrw")
_CHAT_DAYS = {
    **dict.fromkeys(("tmrw", "tmr", "tmw", "2moro", "2mrw", "tomoz"), "tomorrow"),
    **dict.fromkeys(("yday", "yest"), "yesterday"),
    **dict.fromkeys(("tonite", "2nite"), "tonight"),
    "wknd": "weekend",
}
# "it's DOGS I'm allergic to": the thing said first to stress it, put back in its place
_CLEFT = re.compile(
    r"(?i)\b(?:it['’]?s|it is) (?P<thing>(?:\w+ ){0,2}?\w+) (?:that |which )?"
    r"(?P<me>I['’]m|I am) (?P<state>allergic to|afraid of|scared of|into)\b"
)
_CHAT_DAY = re.compile(r"(?i)\b(?:" + "|".join(_CHAT_DAYS) + r")\b")
# "gluten free", "dairy-free", "me time": one word, as the analysis reads it
_HYPHENATED = re.compile(
    r"\b(?:" + "|".join(w.replace("-", r"[\s-]+") for w in HYPHENATED_WORDS) + r")\b",
    re.IGNORECASE,
)
_CAPTION_IN_TEXT = re.compile(r"\[(?:image|photo|img|picture)\s*:\s*([^\]]+)\]", re.I)
_CAPTION_KEYS = ("image_caption", "blip_caption", "caption")
_NOT_NAMES = frozenset(
    {"I", "I'm", "I've", "I'll", "I'd", "OK", "Okay", "Hey", "Hi", "Hello", "Thanks", "Wow"}
    | set(MONTHS)
    | {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
    | {"Yesterday", "Today", "Tomorrow", "Tonight"}
)
_NAME = re.compile(
    r"\b(?!I\b)[A-Z][a-zA-Z'’-]*(?![\w])"
    r"(?:\s+(?:of\s+|the\s+|de\s+)?(?!I\b|I['’])[A-Z][a-zA-Z'’-]*(?![\w]))*"
)


# "it's not Y. it's X" (or "…, it's X"): a correction said the other way round
_NOT_THEN_IS = re.compile(
    r"\b(?P<it>it['’]?s|it is)\s+not\s+(?P<wrong>[^.!?,;]{1,40}?)\s*[.!?,;]+\s*"
    r"(?:it['’]?s|it is)\s+(?P<right>[^.!?,;]{1,40}?)(?=\s*(?:[.!?,;]|$))",
    re.IGNORECASE,
)


def right_first(text: str) -> str:
    """ "its NOT shellfish. its tree nuts" as "its tree nuts, not shellfish": the form a
    correction is read in (:mod:`.corrections`)."""
    return _NOT_THEN_IS.sub(lambda m: f"{m['it']} {m['right']}, not {m['wrong']}", text)


# a tag at the end of a sentence asking to confirm it ("her bday is june 3rd right?")
CONFIRM_TAG = (
    r"[\s,]+(?:right|yeah|yea|ya|yes|correct|no|innit|isn'?t it|aren'?t (?:they|you))"
    r"\s*\?[?!\s]*$"
)
# "A, B right?": the tag asks to confirm the last clause, after a comma-separated one
_TAGGED_LAST = re.compile(rf"^(?P<first>.+?\w),\s+(?P<last>[^,]+?{CONFIRM_TAG})", re.IGNORECASE)


def untag_first(sentence: str) -> list[str]:
    """ "had to remind them i'm allergic to penicillin, amox is the same family right?" as
    two sentences: the tag asks to confirm the last clause only, not what came before."""
    m = _TAGGED_LAST.match(sentence)
    return [m["first"], m["last"]] if m else [sentence]


# a word or two said as a sentence before a lower-case one: "morning. started the new meds"
_SHORT_LEAD = re.compile(r"^([^\W\d_]+(?:\s+[^\W\d_]+)?[.!…]+)\s+(?=[a-z])")


def split_sentences(text: str) -> list[str]:
    """Split chat text into sentences (also at newlines, semicolons and spaced dashes; a
    greeting or word or two said before a lower-case sentence: "morning. started…")."""
    pieces: list[str] = []
    carry = ""
    for piece in (p for part in _SENTENCE_END.split(text.strip()) for p in _lead_off(part)):
        piece = f"{carry} {piece}".strip() if carry else piece.strip()
        if _ABBREVIATIONS.search(piece):
            carry = piece
            continue
        carry = ""
        if piece:
            pieces.append(piece)
    if carry:
        pieces.append(carry)
    return pieces


def _lead_off(piece: str) -> list[str]:
    lead = _SHORT_LEAD.match(piece)
    return [lead[1], piece[lead.end() :]] if lead else [piece]


def strip_filler(sentence: str) -> str:
    """Drop leading interjections ("Yeah, ", "Wow! ") from a sentence."""
    return sentence_start(_LEADING_FILLER.sub("", sentence).strip())


def sentence_start(sentence: str) -> str:
    """The sentence with a capital first letter, unless it opens with a verb's past form
    ("got diagnosed last month": "Got" reads as a name to the tagger)."""
    first = sentence.split(" ", 1)[0]
    if not first or (first.islower() and inflected_verb(first)):
        return sentence
    return sentence[:1].upper() + sentence[1:]


# one's own body part said without "my" at the start of a clause: "knee's still cranky"
_OWN_BODY_PART = re.compile(
    r"(?:^|(?<=, ))(" + "|".join(sorted(BODY_PARTS)) + r")['’]s(?=\s)", re.IGNORECASE
)
# "it's dani's birthday friday": whose day it is, said first
_ITS_DAY = re.compile(
    r"(?i)\bit['’]?s (?P<whose>\w+['’]s|my|his|her|our|their) (?P<day>birthday|bday|anniversary)"
    r" (?=(?:on |this |next )?\w)"
)
# "her birthday is friday": the day it falls on this time ("today is friday" is today)
_DAY_IS_WEEKDAY = re.compile(
    rf"(?i)\b(?P<day>birthday|bday|anniversary) is (?=(?:{'|'.join(sorted(WEEKDAYS))})\b)"
)
# a secret given: "password is my birthday, 0412", "my pin's 4432"
_SECRET = re.compile(
    r"(?i)\b(?:password|passcode|pass code|passphrase|pin(?: code| number)?|cvv|cvc"
    r"|security code)(?:['’]s|\s+(?:is|was|=)|\s*[:=])"
)
# "guess who signed up for her first tri": the speaker, news told as a riddle
_GUESS_WHO = re.compile(r"(?i)^guess who(?P<be>['’]s| is)?\s+(?=\w)")
# "the vegetarian era is over": a diet or a state given up
_ERAS = r"(?P<what>vegetarian|vegan|pescatarian|keto|sober|single)\s+(?:era|phase|days|life)"
_ERA_OVER = re.compile(rf"(?i)\b(?:the|my)\s+{_ERAS}\s+(?:is|are)\s+(?:over|done)\b")
# a sentence that is only the era one is in ("pescatarian era 🐟", "my sober era"): one is so now
_ERA_BEGUN = re.compile(
    rf"(?i)(?:^|(?<=[.!?…] ))(?:(?:in\s+)?(?:my|the)\s+)?{_ERAS}(?:\s+(?:begins|starts))?"
    r"(?=\s*(?:[.!?…]|$))"
)
# "rn" for "right now", in lower case and not after an article ("an rn" is a nurse)
_CHAT_RIGHT_NOW = re.compile(r"(?<!\ban )(?<!\ba )\brn\b")
# "r" for "are" between two words ("heights r fine", "we r going")
_CHAT_ARE = re.compile(r"(?<=[A-Za-z] )r(?= [A-Za-z])")
# "'s" before whose: "is", never a possessive ("hale's my coach": the tagger reads "hale's")
_IS_BEFORE_WHOSE = re.compile(r"(?<=\w)['’]s(?=\s+(?:my|your|his|her|our|their)\b)", re.I)
# one's relation's "is" written without its apostrophe: "my wifes celiac", "my moms a nurse"
_ROLE_IS = re.compile(r"\b(?P<my>[Mm]y|[Oo]ur) (?P<role>[a-z]+)s (?=(?P<next>[a-z]+)\b)")
_BEFORE_ROLE_IS = frozenset(("a", "an", "the", "so", "super", "really", "always", "never", "not"))
# "'s" before a verb's "-ing": "is" ("priya's transferring to singapore"); not before a
# noun in "-ing" ("my sister's wedding")
_IS_BEFORE_ING = re.compile(r"(?<=\w)['’]s(?= (?P<ing>[a-z]+ing)\b)")


def tidy(sentence: str) -> str:
    """Chat noise out of a sentence: "lol", "fyi", "tbh" and emoji, repeated marks,
    shouting (an all-capitals sentence in sentence case), "im"/"ive", "ill"/"id"/"hell"…
    before a verb, "hes"/"theyre", "u"/"ur", "r", "rn", "bc" and days ("tmrw", "yday")
    spelled out; "'s" before "my", "her"… or a verb's "-ing" as "is" ("hale's my coach",
    "priya's moving"), and a relation's "s" before a state ("my wifes celiac"); "it's
    dani's birthday friday" as "dani's birthday is on friday"; a diet written as one word
    ("gluten free" → "gluten-free"); "it's dogs I'm allergic to" as "I'm allergic to
    dogs"; "the vegetarian era is over" as "I'm not vegetarian anymore", "pescatarian era"
    as "I'm pescatarian now"; "guess who signed up for her first tri" as "I signed up for
    my first tri" (unless the message tags whose news it is: "… @kofi")."""
    text = _PICTOGRAPHS.sub(" ", sentence)
    text = _HYPHENATED.sub(lambda m: "-".join(m[0].lower().replace("-", " ").split()), text)
    text = _TRAILING_FILLER.sub("", text)
    text = " ".join(_ASIDE_WORDS.sub(lambda m: ", " if "," in m[0] else " ", text).split())
    text = text.replace(" ,", ",").strip(" ,")
    text = _REPEATED_MARKS.sub(r"\1", text).strip()
    letters = [c for c in text if c.isalpha()]
    if len(letters) > 8 and sum(c.isupper() for c in letters) > 0.8 * len(letters):
        text = re.sub(r"\bi\b", "I", text.lower())
        text = text[:1].upper() + text[1:]
    text = _CHAT_DAY.sub(lambda m: _CHAT_DAYS[m[0].lower()], text)
    text = _CHAT_RIGHT_NOW.sub("right now", text)
    text = _CHAT_BECAUSE.sub("because", text)
    text = _ITS_DAY.sub(lambda m: f"{m['whose']} {m['day']} is ", text)
    text = _DAY_IS_WEEKDAY.sub(lambda m: f"{m['day']} is on ", text)
    text = _CHAT_SPELLING.sub(lambda m: "I'm" if m["im"] else "I've", text)
    text = _CHAT_WILL.sub(_will, text)
    text = _CHAT_CONTRACTIONS.sub(_apostrophe, text)
    text = _CHAT_YOU.sub(_you, text)
    text = _IS_BEFORE_WHOSE.sub(" is", text)
    text = _ROLE_IS.sub(_role_is, text)
    text = _IS_BEFORE_ING.sub(lambda m: " is" if _progressive(m["ing"]) else m[0], text)
    text = _CHAT_ARE.sub("are", text)
    text = _OWN_BODY_PART.sub(lambda m: f"my {m[1].lower()} is", text)
    text = _ERA_OVER.sub(lambda m: f"I'm not {m['what'].lower()} anymore", text)
    text = _ERA_BEGUN.sub(lambda m: f"I'm {m['what'].lower()} now", text)
    if (guessed := _GUESS_WHO.match(text)) and "@" not in text:  # "… @kofi": Kofi's news
        rest = re.sub(r"\b(?:her|his)\b", "my", text[guessed.end() :], count=1)
        text = ("I'm " if guessed["be"] else "I ") + rest
    return _CLEFT.sub(_uncleft, text)


def _role_is(m: re.Match[str]) -> str:
    """ "my wifes celiac" → "my wife is celiac": a relation, then a state or a noun."""
    said = m["next"]
    state = known_adjective(said) and not known_verb(said)  # "live" is a verb too
    if m["role"] not in ROLES or not (said in _BEFORE_ROLE_IS or state):
        return m[0]
    return f"{m['my']} {m['role']} is "


def _progressive(word: str) -> bool:
    """Whether a word in "-ing" is a verb's ("transferring", "moving"), not a noun's
    ("wedding", "building")."""
    return not known_noun(word) and verb_before(word, "ing")


def _will(m: re.Match[str]) -> str:
    """ "ill bring" → "I'll bring", "hell go" → "he'll go": only before a verb ("id" is
    "I'd" only: "hed", "shed", "wed" are words)."""
    who = m["who"]
    if not known_verb(m["verb"]) or (m["will"] == "d" and who.lower() != "i"):
        return m[0]
    return f"{'I' if who.lower() == 'i' else who}'{m['will']} {m['verb']}"


def _you(m: re.Match[str]) -> str:
    """ "u" → "you"; "ur" → "you're" before an article, a participle or a state ("ur
    allergic to cats", "ur the best"), else "your" ("ur address")."""
    word = m["word"]
    if word[0] == "U" and m.start() > 0:
        return word  # "the U of M"
    if word.lower() == "u":
        written = "you"
    else:
        after = (m["next"] or "").lower()
        written = "you're" if after in _YOURE_BEFORE or after.endswith("ing") else "your"
    return written.capitalize() if word[0] == "U" else written


def _apostrophe(m: re.Match[str]) -> str:
    """ "hes" → "he's", "theyre" → "they're"."""
    word, tail = (m[1], m[2]) if m[1] else (m[3], m[4])
    return f"{word}'{tail}"


def _uncleft(m: re.Match[str]) -> str:
    thing = m["thing"].lower() if m["thing"].isupper() else m["thing"]
    return f"{m['me']} {m['state']} {thing}"


def gives_secret(sentence: str) -> bool:
    """Whether the sentence gives a password, a PIN or a card's code: memory keeps none."""
    return _SECRET.search(sentence) is not None


def words(text: str) -> list[str]:
    return [w.strip("'’-") for w in _WORD.findall(text) if w.strip("'’-")]


def content_words(text: str, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Lower-cased words that carry meaning (no stopwords, no chat filler)."""
    tokens = (t.strip("'-") for t in _WORD.findall(text.lower().replace("’", "'")))
    return [w for w in tokens if len(w) > 1 and w not in stopwords]


@lru_cache(maxsize=8192)
def singular(word: str) -> str:
    """A crude singular: "drinks" → "drink", "stories" → "story", "kids" → "kid"."""
    if len(word) <= 3 or word.endswith(("ss", "us", "is", "ous")):
        return word
    if word.endswith("ies"):
        return word[:-1] if word[:-1] in IE_NOUNS else word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


_VOWELS = "aeiou"


def gerund(verb: str) -> str:
    """The -ing form of a base verb: "paint" → "painting", "hike" → "hiking"."""
    verb = verb.lower()
    if verb.endswith("ing") or len(verb) < 2:
        return verb
    if len(verb) <= 2:
        return verb + "ing"  # be, go, do
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    vowel_groups = len(re.findall(f"[{_VOWELS}]+", verb))
    short_cvc = (
        vowel_groups == 1
        and len(verb) >= 3
        and verb[-1] not in _VOWELS + "wxy"
        and verb[-2] in _VOWELS
        and verb[-3] not in _VOWELS
    )
    return verb + verb[-1] + "ing" if short_cvc else verb + "ing"


def slug(text: str, limit: int = 3) -> str:
    """A stable key part: the first ``limit`` content words, singular, hyphen-joined."""
    parts = [
        singular(w.replace("'", ""))[:_SLUG_PART] for w in content_words(text, FUNCTION_WORDS)
    ][:limit]
    return "-".join(p for p in parts if p) or "general"


def _opening_word(name: str) -> bool:
    """Capitalised words opening a sentence that are probably no name ("Taking care")."""
    first = name.split()[0].lower()
    return "'" in first or "’" in first or first.endswith(("ing", "ed", "ly")) or first in OPENERS


def _excluded(name: str, excluded: set[str]) -> bool:
    lower = name.lower()
    return lower in excluded or (len(lower) >= 3 and any(e.startswith(lower) for e in excluded))


def names(text: str, exclude: Iterable[str] = ()) -> list[str]:
    """Capitalised names in ``text`` (no stopwords, months, "I", or sentence openers)."""
    excluded = {e.lower() for e in exclude}
    found: list[str] = []
    for match in _NAME.finditer(text):
        name = re.sub(r"['’]s$", "", match.group(0).rstrip("'’-"))
        first = name.split()[0]
        if first.lower() in STOPWORDS or first in _NOT_NAMES or _excluded(name, excluded):
            continue
        if match.start() == 0 and (" " not in name or _opening_word(name)):
            continue
        if len(name) > 1 and name not in found:
            found.append(name)
    return found


def caption_of(content: str, metadata: Mapping[str, Any]) -> tuple[str, str | None]:
    """Split a shared image's caption off a message: metadata first, then "[image: …]"."""
    match = _CAPTION_IN_TEXT.search(content)
    text = _CAPTION_IN_TEXT.sub(" ", content).strip() if match else content
    for key in _CAPTION_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return text, value.strip()
    return text, match.group(1).strip() if match else None


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def ensure_period(sentence: str) -> str:
    sentence = sentence.strip()
    return sentence if sentence[-1:] in ".!?…" else sentence + "."
