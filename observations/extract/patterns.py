"""First-person patterns for the eight user-fact kinds (regexes and their key makers).

Each pattern matches inside one sentence and captures the object phrase as ``obj`` (plus
``cat``, ``role``, ``name`` or ``verb`` where it helps the key). ``trigger`` is a word the
sentence must contain for the pattern to be tried at all ("i" covers I/I'm/I've…, "we"
covers I and we). The key functions follow :mod:`observations.extract.keys`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from observations.extract import regexes as rx
from observations.extract.keys import category, relationship_key, topic
from observations.extract.regexes import OBJ, i_, i_am, i_have
from observations.extract.text import slug

KeyMaker = Callable[[re.Match[str], str], str]


@dataclass(frozen=True, slots=True)
class FactPattern:
    kind: str
    regex: re.Pattern[str]
    key: KeyMaker  # (match, clipped object) -> key
    predicate: str
    confidence: float
    trigger: str = "i"  # i, my, we
    clause_start: bool = False  # only where "I" opens a clause ("so I can…" is no skill)


def _fixed(key: str) -> KeyMaker:
    return lambda m, obj: key


def _topic_key(kind: str, verbal: bool = False) -> KeyMaker:
    with_object = kind == "skill"
    return lambda m, obj: f"{kind}:{topic(obj, verbal, with_object)}"


def _slug_key(kind: str, limit: int = 3) -> KeyMaker:
    return lambda m, obj: f"{kind}:{slug(obj, limit)}"


def _favorite(m: re.Match[str], obj: str) -> str:
    return f"preference:{category(m['cat'], obj)}" if m["cat"] else f"preference:{topic(obj)}"


def _relationship(m: re.Match[str], obj: str) -> str:
    return relationship_key(m["role"], m["name"])


def _allergy(m: re.Match[str], obj: str) -> str:
    return f"constraint:allergy:{slug(obj, 1)}"


def _diet(m: re.Match[str], obj: str) -> str:
    return f"constraint:diet:{slug(obj, 1)}"


def _p(
    kind: str,
    regex: str,
    key: KeyMaker,
    predicate: str,
    confidence: float,
    trigger: str = "i",
    clause_start: bool = False,
) -> FactPattern:
    return FactPattern(kind, re.compile(regex), key, predicate, confidence, trigger, clause_start)


_MY = r"\b[Mm]y\s+"
_FAVORITE = (
    _MY + r"(?:all[- ]time\s+|absolute\s+|very\s+|personal\s+)?(?:favou?rite|preferred|go-to)"
    r"\s+(?:(?:kind|type|sort|style|genre|form)\s+of\s+)?(?P<cat>[a-z]+)\s+(?:is|are|was|were"
    r"|has\s+to\s+be|would\s+(?:have\s+to\s+)?be)\s+" + OBJ
)
_LIKES = (
    r"(?P<verb>love|like|enjoy|adore|prefer|hate|dislike|detest|(?:can['’]?t|cannot)\s+stand"
    r"|(?:do\s+not|don['’]t)\s+(?:really\s+)?(?:like|enjoy))\s+"
)
_INTO = (
    r"(?P<verb>into|passionate\s+about|obsessed\s+with|crazy\s+about|fond\s+of"
    r"|(?:not\s+)?(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of)\s+"
)
_HAVE_A = r"(?:have|['’]ve\s+got|have\s+got|got)\s+(?:an?|one|two|three|four|five|six|\d+)\s+"
_PRACTICE = (
    r"been\s+(?P<obj>[a-z]+ing\b[^.,;!?]{0,40}?)\s+for\s+(?P<dur>(?:over\s+|almost\s+|about"
    r"\s+|nearly\s+)?(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|many"
    r"|several|a\s+few)\s+(?:years?|decades?))"
)
_KNOWS = (
    r"(?P<verb>know\s+how\s+to|learned\s+(?:how\s+)?to|learnt\s+(?:how\s+)?to"
    r"|taught\s+myself(?:\s+how)?\s+to)\s+"
)
_GOOD_AT = (
    r"(?:(?:really|pretty|very|quite|super)\s+)?(?P<verb>good|great|skilled|experienced"
    r"|proficient|fluent|talented|an?\s+expert|an?\s+pro)\s+(?:at|in|with)\s+"
)
_PLAYS = (
    r"(?P<verb>speak|play)\s+(?!with\b|around\b|it\b|a\s+(?:role|part)|games?\b|together\b"
    r"|outside\b|in\b|for\b)"
)
_WANTS = (
    r"(?P<verb>want\s+to|wanna|plan\s+to|hope\s+to|intend\s+to|aim\s+to|aspire\s+to"
    r"|dream\s+of|would\s+(?:really\s+)?(?:like|love)\s+to)\s+"
)
_PLANNING = (
    r"(?P<verb>planning\s+(?:to|on)|hoping\s+to|aiming\s+(?:to|for)|going\s+to|gonna"
    r"|looking\s+to|thinking\s+(?:about|of)|working\s+(?:on|towards?)|saving\s+(?:up\s+)?"
    r"(?:for|to)|determined\s+to|trying\s+to|considering|about\s+to|eager\s+to"
    r"|keen\s+(?:to|on))\s+"
)
_MY_GOAL = (
    _MY + r"(?:main\s+|big\s+|ultimate\s+|long-term\s+|new\s+)?(?P<verb>goal|dream|plan|aim"
    r"|ambition|hope|mission|resolution|wish)\s+(?:is|was)\s+(?:to\s+)?" + OBJ
)
_DIETS = (
    r"(?:an?\s+)?(?P<obj>vegan|vegetarian|pescatarian|lactose[- ]intolerant|gluten[- ]intolerant"
    r"|gluten[- ]free|diabetic|celiac|coeliac|sober|teetotal|kosher|halal)\b"
)
_NO_EAT = (
    r"(?P<verb>(?:don['’]t|do\s+not|never|can['’]?t|cannot|can\s+not)\s+(?:eat|drink|consume))\s+"
)
_CANNOT = (
    r"(?P<verb>can['’]?t|cannot|can\s+not|(?:have|need|try)\s+to\s+avoid|must\s+avoid|avoid"
    r"|stay\s+away\s+from)\s+" + rx.NOT_CONSTRAINT
)
_OCCUPATION = (
    r"(?:working\s+as\s+)?an?\s+(?:(?:[a-z-]+)\s+){0,2}?(?P<obj>"
    + rx.OCCUPATIONS
    + r")\b(?!\s+(?:of|for\s+(?:a|the)\s+day))"
)
_GENDER = (
    r"(?:an?\s+)?(?:proud\s+|openly\s+)?(?P<obj>(?:trans(?:gender)?|non-?binary|cisgender"
    r"|genderqueer)(?:\s+(?:woman|man|person))?)\b"
)
_ORIENTATION = (
    r"(?:an?\s+)?(?:proud\s+|openly\s+)?(?P<obj>gay|lesbian|bisexual|queer|straight|pansexual"
    r"|asexual)\b(?!\s+(?:friends?|bar|club|community|people))"
)
_PARENT = (
    r"an?\s+(?:proud\s+|single\s+|new\s+)?(?P<obj>(?:mom|mother|dad|father|parent"
    r"|grandmother|grandfather|grandparent)(?:\s+of\s+\w+)?)\b"
)
_STUDIES = r"(?:study|studied|major\s+in|majored\s+in)\s+"
_ORIGIN = r"(?:come\s+from|grew\s+up\s+in|was\s+born\s+in|was\s+raised\s+in)\s+"
_PERFECT = (
    r"(?:never\s+|always\s+|already\s+|just\s+|recently\s+|finally\s+|also\s+)?" + rx.PERFECT_VERBS
)
_NAME = r"\b(?:[Mm]y\s+name\s+is|[Cc]all\s+me)\s+(?P<obj>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)"
_AGE = r"(?P<obj>\d{1,3})\s+(?:years?\s+old|yo)\b"
_STATUS = r"(?P<obj>married|single|divorced|engaged|widowed|separated)\b"
_ROLE = rx.ROLES + r"\b(?!['’]s?\b)" + rx.NAMED + r"(?P<obj>)"
_ALLERGIC = r"(?:severely\s+|very\s+|highly\s+|deathly\s+)?(?P<verb>allergic)\s+to\s+"
_UNABLE = r"(?P<verb>not\s+allowed|unable|not\s+able)\s+to\s+"

PATTERNS: tuple[FactPattern, ...] = (
    _p("preference", _FAVORITE, _favorite, "favorite", 0.9, trigger="my"),
    _p("preference", i_(_LIKES + OBJ), _topic_key("preference"), "likes", 0.75),
    _p("preference", i_am(_INTO + OBJ), _topic_key("preference"), "likes", 0.75),
    _p(
        "relationship",
        _MY + r"(?:(?:[a-z]+|\d+)\s+){0,2}?" + _ROLE,
        _relationship,
        "has",
        0.8,
        "my",
    ),
    _p("relationship", i_(_HAVE_A + r"(?:[a-z]+\s+)?" + _ROLE), _relationship, "has", 0.8),
    _p("skill", i_have(_PRACTICE), _topic_key("skill"), "practises", 0.75),
    _p("skill", i_(_KNOWS + OBJ), _topic_key("skill", verbal=True), "can", 0.75),
    _p("skill", i_am(_GOOD_AT + OBJ), _topic_key("skill"), "is good at", 0.7),
    _p(
        "skill",
        i_(r"(?P<verb>can)\s+" + rx.NOT_SKILL + OBJ),
        _topic_key("skill", True),
        "can",
        0.5,
        clause_start=True,
    ),
    _p("skill", i_(_PLAYS + OBJ), _topic_key("skill"), "plays", 0.6, clause_start=True),
    _p("goal", i_(_WANTS + OBJ), _slug_key("goal"), "wants to", 0.75),
    _p(
        "goal",
        rx.SUBJ + r"['’]d\s+(?:really\s+)?(?:like|love)\s+to\s+" + OBJ,
        _slug_key("goal"),
        "would like to",
        0.7,
    ),
    _p("goal", i_am(_PLANNING + OBJ), _slug_key("goal"), "plans to", 0.7),
    _p("goal", _MY_GOAL, _slug_key("goal"), "goal", 0.85, trigger="my"),
    _p("constraint", i_am(_ALLERGIC + OBJ), _allergy, "is allergic to", 0.9),
    _p("constraint", i_am(_DIETS), _fixed("constraint:diet"), "is", 0.85),
    _p("constraint", i_(_NO_EAT + OBJ), _diet, "does not eat", 0.8),
    _p(
        "constraint",
        _MY + r"budget\s+(?:is|was)\s+(?:only\s+|around\s+|about\s+)?" + OBJ,
        _fixed("constraint:budget"),
        "budget",
        0.85,
        "my",
    ),
    _p(
        "constraint",
        i_(_CANNOT + OBJ),
        _slug_key("constraint", 2),
        "cannot",
        0.55,
    ),
    _p("constraint", i_am(_UNABLE + OBJ), _slug_key("constraint", 2), "cannot", 0.65),
    _p("identity", _NAME, _fixed("identity:name"), "is named", 0.95, trigger="any"),
    _p(
        "identity",
        i_(r"work\s+as\s+(?:an?\s+)?" + OBJ),
        _fixed("identity:occupation"),
        "works as",
        0.9,
    ),
    _p("identity", i_am(_OCCUPATION), _fixed("identity:occupation"), "is a", 0.8),
    _p("identity", i_(r"work\s+(?:at|for)\s+" + OBJ), _fixed("identity:employer"), "works at", 0.8),
    _p(
        "identity",
        i_am(r"working\s+(?:at|for)\s+" + OBJ),
        _fixed("identity:employer"),
        "works at",
        0.8,
    ),
    _p("identity", i_am(r"from\s+" + OBJ), _fixed("identity:origin"), "is from", 0.85),
    _p("identity", i_(_ORIGIN + OBJ), _fixed("identity:origin"), "is from", 0.85),
    _p(
        "identity",
        i_(r"(?:live|moved|relocated)\s+(?:in|to)\s+" + OBJ),
        _fixed("identity:location"),
        "lives in",
        0.75,
    ),
    _p("identity", i_am(r"living\s+in\s+" + OBJ), _fixed("identity:location"), "lives in", 0.75),
    _p("identity", i_am(_AGE), _fixed("identity:age"), "is aged", 0.9),
    _p("identity", i_am(_GENDER), _fixed("identity:gender"), "is", 0.85),
    _p("identity", i_am(_ORIENTATION), _fixed("identity:orientation"), "is", 0.85),
    _p("identity", i_am(_STATUS), _fixed("identity:relationship-status"), "is", 0.85),
    _p("identity", i_(_STUDIES + OBJ), _fixed("identity:education"), "studies", 0.75),
    _p(
        "identity",
        i_am(r"(?:studying|majoring\s+in)\s+" + OBJ),
        _fixed("identity:education"),
        "studies",
        0.75,
    ),
    _p(
        "identity",
        _MY + r"pronouns\s+are\s+" + OBJ,
        _fixed("identity:pronouns"),
        "uses pronouns",
        0.95,
        "my",
    ),
    _p("identity", i_am(_PARENT), _fixed("identity:parent"), "is a", 0.8),
    _p(
        "experience",
        i_(rx.EXPERIENCE_VERBS + r"\b\s*" + OBJ, rx.I_OR_WE),
        _slug_key("experience"),
        "did",
        0.7,
        "we",
    ),
    _p(
        "experience",
        i_have(_PERFECT + OBJ, rx.I_OR_WE),
        _slug_key("experience"),
        "has done",
        0.7,
        "we",
    ),
)
EVENT_NOUNS = re.compile(rx.EVENT_NOUNS)
NEGATIVE = re.compile(rx.NEGATIVE)
