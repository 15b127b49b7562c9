"""Regex building blocks for the first-person fact patterns."""

from __future__ import annotations

SUBJ = r"(?<![\w'’])(?:I|i)"
I_OR_WE = r"(?<![\w'’])(?:I|i|[Ww]e)"
ADV = (
    r"(?:\s+(?:really|also|just|still|absolutely|totally|truly|actually|definitely|"
    r"genuinely|honestly|always|usually|now|kinda|sometimes|even|recently|finally|already|"
    r"never|personally|seriously|especially|currently|ever))*"
)
OBJ = r"(?P<obj>[^.,;:!?–—()\"“”]{2,90})"
NAMED = r"(?:(?:,\s*|\s+)(?:(?:who\s+is\s+)?(?:called|named)\s+)?(?P<name>[A-Z][a-z]+))?"
ROLES = (
    r"(?P<role>best\s+friend|sisters?|brothers?|siblings?|mom|mum|mother|mama|dad|father|papa"
    r"|parents|wife|husband|hubby|partner|spouse|boyfriend|girlfriend|fianc[eé]e?|sons?"
    r"|daughters?|kids?|children|child|baby|grandma|grandmother|grandpa|grandfather"
    r"|grandparents|granny|aunt|auntie|uncle|cousins?|niece|nephew|friends?|bff|bestie"
    r"|roommate|co-?workers?|colleagues?|boss|mentor|neighbou?rs?|family|in-laws|dogs?"
    r"|cats?|pupp(?:y|ies)|pups?|pets?|snake|parrot|hamster|horse|rabbit|bunny|turtle"
    r"|teacher|therapist|coach|manager|classmates?)"
)
OCCUPATIONS = (
    r"(?P<occ>nurse|teacher|engineer|developer|programmer|doctor|physician|student|artist"
    r"|painter|writer|author|designer|lawyer|attorney|chef|accountant|manager|scientist"
    r"|researcher|professor|musician|singer|photographer|counsell?or|therapist|social\s+worker"
    r"|architect|pilot|firefighter|police\s+officer|soldier|veteran|mechanic|electrician"
    r"|plumber|carpenter|farmer|journalist|editor|consultant|analyst|entrepreneur|freelancer"
    r"|barista|waiter|waitress|cashier|pharmacist|dentist|vet|veterinarian|librarian|coach"
    r"|trainer|instructor|dancer|actor|actress|athlete|retiree|homemaker|intern|surgeon"
    r"|paramedic|psychologist|biologist|chemist|physicist|historian|baker|tutor|mentor"
    r"|volunteer|ceo|founder|owner)"
)
NOT_SKILL = (
    r"(?!(?:not|see|tell|imagine|relate|help|come|go|do|make\s+it|try|understand|feel|get|be"
    r"|say|only|also|always|still|just|hear|totally|definitely|really|picture|bring|give"
    r"|take|meet|send|show|let|ask|wait|believe|hardly|barely|check|share|talk|recommend"
    r"|think|use|find|catch|join|start|keep|put|grab|sense|hang|work\s+on|have|stay"
    r"|provide|suggest|contribute|offer|count|learn|focus|finally|now|handle|spend|enjoy"
    r"|relax|rest|breathe|manage|afford)\b)"
)
NOT_CONSTRAINT = (
    r"(?!(?:wait|believe|imagine|thank|stand|tell|help|get\s+enough|stop|express|describe"
    r"|say|think|remember|decide|agree|complain|argue|deny|resist|explain|put|even|really"
    r"|quite|lie|forget|recall|emphasi[sz]e|stress|overstate|blame|fathom|ignore|do\s+it"
    r"|go\s+wrong|hear|see|find\s+the\s+words|be\s+happier|get\s+over|shake|live\s+without"
    r"|refuse|miss|beat|top|argue|compare|handle\s+it|take\s+it|keep\s+up)\b)"
)
EXPERIENCE_VERBS = (
    r"(?P<verb>went\s+through|went|visited|attended|tried|travell?ed|saw|met|joined"
    r"|volunteered|participated|took\s+part|experienced|completed|finished|started|began"
    r"|learned|learnt|won|ran|hiked|climbed|watched|played|built|painted|cooked|baked"
    r"|adopted|moved|graduated|bought|spent|lost|received|survived|organi[sz]ed|hosted"
    r"|performed|wrote|created|launched|published|celebrated|explored|camped|studied|taught"
    r"|raised|signed\s+up|picked\s+up|got\s+(?=married|engaged|divorced|promoted|a\b|an\b|my\b"
    r"|into\b|back\b|to\s+\w)|had\s+(?=a\b|an\b|my\b|the\b|some\b|surgery))(?!['’])"
)
PERFECT_VERBS = (
    r"(?P<verb>been\s+to|done|seen|visited|tried|travell?ed|met|run|lived|worked|read"
    r"|watched|won|learned|learnt|started|finished|completed|volunteered|taken|gone|joined"
    r"|adopted|made|created|written|built)\b\s*"
)
EVENT_NOUNS = (
    r"\b[Mm]y\s+(?P<obj>(?:[a-z]+\s+){0,2}?(?:wedding|birthday|graduation|exam|interview|trip"
    r"|vacation|holiday|party|concert|surgery|appointment|flight|move|anniversary|recital"
    r"|show|race|game|match|presentation|performance|exhibition|retirement|due\s+date"
    r"|shower|first\s+day|competition|tournament|marathon|audition|ceremony))\b"
)
NEGATIVE = r"hate|dislike|detest|stand|don['’]t|do\s+not|not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan"


def i_(body: str, subject: str = SUBJ) -> str:
    """``I <adverbs> <body>``."""
    return subject + ADV + r"\s+" + body


def i_am(body: str) -> str:
    """``I'm/I am <adverbs> <body>``."""
    return SUBJ + r"(?:\s+am|['’]m)" + ADV + r"\s+" + body


def i_have(body: str, subject: str = SUBJ) -> str:
    """``I've/I have <adverbs> <body>``."""
    return subject + r"(?:\s+have|['’]ve)" + ADV + r"\s+" + body
