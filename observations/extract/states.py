"""The fact rules for states: what someone is, has as "my <noun>", or became.

"I'm vegetarian" (constraint:diet), "I'm allergic to peanuts" (constraint:allergy:peanut),
"I'm a nurse" (identity:occupation), "I'm from Sweden" (identity:origin), "I'm 31 years
old" (identity:age), "I'm a big fan of jazz" (preference:jazz), "I'm good at baking bread"
(skill:baking-bread), "I got married" (identity:relationship-status), where one is
("I'm in Shibuya", experience:in-shibuya; "I'm in Porto until Sunday", an event of that
day), and what is said of a "my <noun>": "my favorite drink is green tea"
(preference:drink), "my name is Maya" (identity:name), "my goal is to run a marathon"
(goal:run-marathon).
"""

from __future__ import annotations

from observations.extract.analysis import Word, known_adjective, known_noun
from observations.extract.date_periods import MONTHS
from observations.extract.frames import Frame, Reading
from observations.extract.frames import reading as _reading
from observations.extract.references import given_name
from observations.extract.topics import noun_topic, part, skill_topic, topic_of, verb_noun
from observations.extract.vocabulary import (
    BODY_PARTS,
    DIETS,
    EVENT_NOUNS,
    FAVORITE,
    GENDER,
    GOAL_NOUNS,
    HABITUAL,
    INTOLERANCES,
    JOBS,
    JUDGEMENTS,
    KEEN,
    OCCUPATIONS,
    ORIENTATION,
    OWN_ATTRIBUTES,
    ROLES,
    SETTINGS,
    SKILLED,
    STATUS,
    TIME_NOUNS,
    WEEKDAYS,
    WORKING_LIFE,
    words,
)

_DAYS = frozenset(("birthday", "anniversary"))  # "my birthday is on the 3rd of march"
_CHANGED = frozenset(("change", "switch", "move"))  # "my address changed to …"


def attribute(f: Frame) -> Reading | None:
    """Said of a "my <noun>": "My favorite drink is a flat white", "my goal is to run…", "my
    insurance changed to aetna"."""
    noun = f.subject_noun
    changed = f.lemma in _CHANGED and not f.negative  # "my insurance changed to aetna"
    if changed and (noun is None or noun.lemma not in OWN_ATTRIBUTES):
        return None  # "my plans changed to next week"
    if noun is None or (not f.copula and f.xcomp() is None and not changed):
        return None
    values = f.preps("to") if changed else f.comps() or f.objects() or f.preps()
    if noun.dep == "attr" and f.clause.subject is not None:
        values = [f.parsed.words[f.clause.subject]]  # "Radiohead is my favourite band"
    if not values:
        return None
    value = values[0]
    mods = {k.lemma for k in f.parsed.kids(noun.i, "amod", "compound")}
    if mods & FAVORITE:
        return _reading(f, "preference", noun_topic(f.parsed, noun.i), value.i, 0.9)
    if noun.lemma in GOAL_NOUNS:
        return _reading(f, "goal", verb_noun(f.parsed, value.i), value.i, 0.85)
    if noun.lemma in BODY_PARTS and f.copula and value.dep == "acomp":
        # "my knee is still cranky from the acl op": what one's body needs minded
        return _reading(f, "constraint", f"health:{noun.lemma}", value.i, 0.8)
    if noun.lemma in OWN_ATTRIBUTES:
        kind, topic = OWN_ATTRIBUTES[noun.lemma]
        if value in f.preps() and not f.comps() and topic not in _DAYS and not changed:
            return None  # "my car is in the shop" says where, not which
        if (value.dep == "acomp" and known_adjective(value.lower)) or _kind_of(f, noun):
            return None  # "my job is stressful", "my moving company is…": not which one
        return _reading(f, kind, topic, value.i, 0.9)
    return None


def _kind_of(f: Frame, noun: Word) -> bool:
    """ "moving company", "rental car": a kind of the thing, not one's own."""
    mods = f.parsed.kids(noun.i, "compound", "amod")
    return any(m.dep == "compound" or m.tag == "VBG" for m in mods)


def scheduled(f: Frame) -> Reading | None:
    """An event of one's own set for a day: "my interview is on friday", "my exam is next
    monday", "my sister's wedding is in two weeks" (an event, keyed by its date)."""
    noun = f.subject_noun
    if noun is None or noun.lemma not in EVENT_NOUNS or f.lemma != "be" or f.negative:
        return None
    when = [w for w in (*f.preps("on", "in"), *f.kids("npadvmod")) if _a_day(w)]
    return _reading(f, "experience", part(noun.lemma), when[0].i, 0.8) if when else None


def ending(f: Frame) -> Reading | None:
    """One's document or agreement running out on a day: "my passport runs out in
    november", "my visa expires on june 3", "my lease ends in march" (keyed by the thing)."""
    noun = f.subject_noun
    if noun is None or noun.lemma not in _TERMS or f.negative or f.modal is not None:
        return None
    ends = f.lemma in ("expire", "lapse", "end") or (
        f.lemma == "run" and any(k.lower == "out" for k in f.kids("prt"))
    )
    when = [w for w in (*f.preps("on", "in", "at"), *f.kids("npadvmod")) if _a_day(w)]
    return (
        _reading(f, "experience", f"{part(noun.lemma)}-ends", when[0].i, 0.8)
        if ends and when
        else None
    )


def away(f: Frame) -> Reading | None:
    """Where one is until a day: "im at the dev conference in lyon till wednesday", "i'm in
    porto until sunday" (a stay, not a home; keyed by where)."""
    if not f.copula or f.negative or f.modal is not None or f.past:
        return None
    until = [w for w in f.preps("until", "till", "til") if _a_day(w)]
    where = [w for w in f.preps("at", "in") if w.pos in ("NOUN", "PROPN")]
    if not until or not where:
        return None
    return _reading(f, "experience", f"at-{topic_of(f.parsed, where[0].i)}", until[0].i, 0.7)


# what one holds until a day: documents, agreements, memberships
_TERMS = words(
    """passport visa licence license permit lease tenancy contract membership subscription
    warranty insurance policy id card residency"""
)
_MONTHS = frozenset(m.lower() for m in MONTHS)


def _a_day(word: Word) -> bool:
    """A word that names a day or a span of days ("friday", "14th", "weeks", "june")."""
    lower = word.lower
    ordinal = lower[:-2].isdigit() and lower[-2:] in ("st", "nd", "rd", "th")
    return lower in WEEKDAYS or word.lemma in TIME_NOUNS or lower in _MONTHS or ordinal


def naming(f: Frame) -> Reading | None:
    """A relation named: "my new boss is Aisha Karim" (relationship:manager), "my new
    manager is called dana", "my cat is named Mochi", "my manager is gonna be priya"."""
    subject = f.parsed.words[f.clause.subject] if f.clause.subject is not None else None
    if subject is None or subject.lemma not in ROLES:
        return None
    if f.copula or f.lemma == "go":  # "… is Priya", "… is going to be priya"
        names = [w for i in f.clause.words if given_name(f.parsed, w := f.parsed.words[i])]
    elif f.lemma in ("call", "name") and f.head.tag == "VBN" and f.kids("auxpass"):
        names = [c for c in f.kids("oprd", "attr") if c.pos in ("PROPN", "NOUN")]
    else:
        return None
    return _reading(f, "relationship", "", names[0].i, 0.8) if names else None


def copula(f: Frame) -> Reading | None:
    """A state: "I'm vegetarian", "I'm a nurse", "I'm allergic to peanuts", "I'm from Sweden"."""
    if not f.copula:
        return None
    for comp in f.comps():
        found = _state(f, comp)
        if found is not None:
            return found
    origin = next(iter(f.preps("from")), None)
    # not "on paternity leave from late may": a time from which, no origin
    timed = origin is not None and (_a_day(origin) or bool(f.kids("amod", of=origin.i)))
    if origin is not None and not timed and not f.preps("on", "at", "in"):
        return _reading(f, "identity", "origin", origin.i, 0.85)
    settled = any(k.lower in ("now", "currently", "still") for k in f.kids("advmod"))
    places = [p for p in f.preps("in") if _place_name(f, p)]
    if places and ((settled and places[0].pos == "PROPN") or _lasting(f)):
        # "we're in Bologna now", "been in sheffield since june"
        return _reading(f, "identity", "city", places[0].i, 0.75)
    named = [p for p in places if p.pos == "PROPN" or not known_noun(p.lower)]
    if named and not (f.negative or f.past or f.modal):
        # "i'm in shibuya": where one is, as of the day said (a home or a stay alike); not
        # a common noun ("i'm in luck", "in traffic", "in line")
        return _reading(f, "experience", f"in-{part(named[0].lemma)}", named[0].i, 0.7)
    for thing in f.preps("into"):
        return _reading(f, "preference", topic_of(f.parsed, thing.i), thing.i, 0.75)
    return _habit(f) or _workplace(f)


def _lasting(f: Frame) -> bool:
    """Said to last, and not as a stay: "since June", "since 2019", "for 3 years"; not
    "since monday", "for a week", "since nov visiting my aunt", "for work"."""
    since = [w for w in f.preps("since") if w.lower in _MONTHS_AND_SEASONS or _a_year(w)]
    lasting = [w for w in f.preps("for") if w.lemma in ("year", "month")]
    stay = [w for w in f.preps("for", "on") if w.lemma in _STAYS] or [
        w for w in f.kids("advcl", "xcomp", "conj") if w.lemma in ("visit", "stay", "work")
    ]
    return bool(since or lasting) and not stay


def _a_year(word: Word) -> bool:
    return word.lower.isdigit() and len(word.lower) == 4


_MONTHS_AND_SEASONS = frozenset(
    (*_MONTHS, *(m[:3] for m in _MONTHS), "sept", "spring", "summer", "autumn", "fall",
     "winter", "christmas")
)  # fmt: skip
# what one is somewhere for, or on, that makes it a stay
_STAYS = words(
    """work business conference trip holiday holidays vacation job wedding funeral course
    training visit tour"""
)


def _place_name(f: Frame, word: Word) -> bool:
    """A place by its name: "Leeds", or in lower-case chat a bare singular noun that names
    no setting or state ("sheffield"; not "the hospital", "hospital", "love")."""
    if f.parsed.kids(word.i, "det", "poss", "amod", "compound"):
        return False
    if word.lower in SETTINGS | _STATES_BEEN_IN:  # "in heaven", tagged a name or not
        return False
    return word.pos == "PROPN" or word.tag == "NN"


# what one is or has "been in since …" that is no place
_STATES_BEEN_IN = words(
    """hospital therapy rehab love trouble touch charge jail prison quarantine isolation
    lockdown labour labor recovery treatment remission business town pain shock debt
    contact control limbo denial hiding bed care mourning tears agony bits heaven"""
)


def _habit(f: Frame) -> Reading | None:
    """Where one is, time and again: "I'm at the gym at 5am every day", "we're at church
    every Sunday" (an experience keyed by the place); not once ("I'm at the gym")."""
    places = [p for p in f.preps("at") if p.pos == "NOUN" and f.kids("det", "poss", of=p.i)]
    if not places or f.negative or f.past or not _recurring(f):
        return None
    return _reading(f, "experience", f"at-{noun_topic(f.parsed, places[0].i)}", places[0].i, 0.7)


def _recurring(f: Frame) -> bool:
    """A phrase of recurrence on the clause: "every day", "each morning", "daily"."""
    for word in f.kids("npadvmod", "advmod"):
        if word.lower in HABITUAL:
            return True
        if (word.lemma in TIME_NOUNS or word.lower in WEEKDAYS) and f.kids("det", of=word.i):
            return f.kids("det", of=word.i)[0].lower in ("every", "each")
    return False


def about_a_job(f: Frame) -> bool:
    """The clause's sentence names a job or what comes with one ("switched jobs", "quit
    the bakery job", "got hired", "my commute is 10 min"); not "a job interview", "the
    job fair", where the job word only modifies."""
    return any(
        (w.lemma in JOBS or w.lemma in WORKING_LIFE) and w.dep != "compound" for w in f.parsed.words
    )


def _workplace(f: Frame) -> Reading | None:
    """ "I switched jobs, I'm at Brightline now": "at" a name, in a sentence about a job,
    is an employer; not a place one is at ("at the gym", "at home", "at work")."""
    if not about_a_job(f) or f.negative:
        return None
    for found in f.preps("at"):
        bare = not f.kids("det", "poss", of=found.i) and found.pos in ("PROPN", "NOUN")
        if bare and found.lemma not in SETTINGS and found.tag not in ("NNS", "NNPS"):
            return _reading(f, "identity", "employer", found.i, 0.75)
    return None


# what one is "allergic to" only in jest
_NO_ALLERGENS = words(
    """attention morning mornings monday mondays people work effort exercise cardio drama
    commitment responsibility nonsense adulting email emails meeting meetings homework
    chore chores running math maths socializing socialising politics"""
)


def _state(f: Frame, comp: Word) -> Reading | None:
    lemma, kids = comp.lemma, f.kids(of=comp.i)
    mods = {k.lemma for k in kids if k.dep in ("amod", "compound", "npadvmod")}
    if lemma in INTOLERANCES:  # beside a diet, not in its place: "vegan and gluten-free"
        return _reading(f, "constraint", f"diet:{lemma}", comp.i, 0.85)
    if lemma in DIETS or lemma == "intolerant":
        return _reading(f, "constraint", "diet", comp.i, 0.85)
    if lemma == "allergic":
        things = f.preps("to", of=comp.i)
        # "allergic to shellfish" is at times parsed as an infinitive ("to" + a verb)
        misread = [k for k in kids if k.dep == "xcomp" and k.pos == "VERB"]
        if not things and not misread:
            return None
        thing = things[0] if things else misread[0]
        if thing.lemma in _NO_ALLERGENS:
            return None  # "allergic to attention": said in jest
        topic = f"allergy:{noun_topic(f.parsed, thing.i) if things else part(thing.lower)}"
        return _reading(f, "constraint", topic, thing.i, 0.9)
    if lemma in STATUS:
        return _reading(f, "identity", "relationship-status", comp.i, 0.85)
    if lemma == "pregnant":
        return _reading(f, "identity", "pregnancy", comp.i, 0.85)
    if lemma in ("retired", "unemployed"):
        return _reading(f, "identity", "employment", comp.i, 0.8)
    if lemma in GENDER or mods & GENDER:
        return _reading(f, "identity", "gender", comp.i, 0.85)
    if lemma in ORIENTATION:
        return _reading(f, "identity", "orientation", comp.i, 0.85)
    if lemma in SKILLED or lemma in KEEN or lemma == "fan":
        return _keen(f, comp.i, lemma)
    if lemma == "interested" and _interest_held(f):
        return _keen(f, comp.i, lemma)  # "I'm interested in photography"
    number = [k for k in f.parsed.words[comp.left : comp.i] if k.tag == "CD"]
    if lemma == "old" and number:
        return _reading(f, "identity", "age", number[0].i, 0.9)
    if f.modal is not None and comp.dep == "attr":
        return None  # what one would or will be: "you'd be a great counselor", a wish or praise
    if comp.dep == "attr" and _an_age(f, comp):
        return _reading(f, "identity", "age", comp.i, 0.8)  # "i'm 34 now"
    if comp.dep == "attr" and lemma in ROLES and f.kids("poss", of=comp.i):
        return None  # "Hale is my coach": a relation named (references), not a trade
    trade = lemma in OCCUPATIONS or (lemma not in ROLES and _named_workplace(f, comp))
    if comp.pos == "NOUN" and trade and comp.dep == "attr":
        if _praise(f, comp):
            return None  # "you're the best cook", "she's the worst driver"
        for employer in f.preps("at", "for", of=comp.i) if lemma != "student" else ():
            # "I'm a nurse at St. Jude's": bound to its workplace, the fact ends when the
            # employer changes ("I'm at Brightline now"), so it is keyed by the employer
            return _reading(f, "identity", "employer", employer.i, 0.8)
        return _reading(f, "identity", "occupation", comp.i, 0.8)
    if lemma in ("mother", "father", "mom", "dad", "parent") and comp.dep == "attr":
        return _reading(f, "identity", "parent", comp.i, 0.8)
    if comp.pos == "NOUN" and comp.dep == "attr" and _describes(f, comp):
        return _reading(f, "identity", noun_topic(f.parsed, comp.i), comp.i, 0.75)
    placed = {lemma, comp.lower} & {"based", "located", "stuck", "settled"}
    if placed and f.preps("in", of=comp.i):
        return _reading(f, "identity", "city", f.preps("in", of=comp.i)[0].i, 0.8)
    return None


def _named_workplace(f: Frame, comp: Word) -> bool:
    """A noun said with a named place it is "at" or "for" ("a dispatcher at Kestrel
    Freight", "a welder for hanlon steel"): a trade, whether or not it is one of the known
    ones; not a place one is at ("a regular at the gym")."""
    for place in f.preps("at", "for", of=comp.i):
        if f.kids("det", "poss", of=place.i) or place.lemma in SETTINGS:
            continue
        names = [place, *f.kids("compound", of=place.i)]
        if any(w.pos == "PROPN" or not known_noun(w.lower) for w in names):
            return True
    return False


def _praise(f: Frame, comp: Word) -> bool:
    """A noun of a trade with a superlative ranks someone, it does not say what they do
    for a living: "the best cook", "the worst driver ever"."""
    return any(k.tag == "JJS" for k in f.kids(of=comp.i))


def _an_age(f: Frame, comp: Word) -> bool:
    """A bare number one is: "i'm 34 now" (not "34%", "5 minutes late"; nor a number a
    thing of one's is: "my resting heart rate is 58")."""
    if comp.tag != "CD" or not comp.text.isdigit() or f.kids(of=comp.i) or f.negative:
        return False
    if f.subject_noun is not None and f.subject_noun.lemma not in ROLES:
        return False
    return 0 < int(comp.text) < 120


def _describes(f: Frame, comp: Word) -> bool:
    """ "I'm a night owl", "I'm still a brown belt", "he's a corgi named Waffles": a noun
    that says what someone is, with a modifier or a name to make it specific, no "my"
    (that names a relation) and no judgement."""
    kids = f.kids(of=comp.i)
    if any(k.dep == "poss" for k in kids) or comp.lemma in JUDGEMENTS or f.negative:
        return False
    named = any(k.dep == "acl" and k.lemma in ("name", "call") for k in kids)  # "a corgi named…"
    return named or any(k.dep in ("amod", "compound") and k.lemma not in JUDGEMENTS for k in kids)


def _interest_held(f: Frame) -> bool:
    """An interest one has, or another had ("my mom was interested in art"); not one the
    speaker had once ("I was interested in buying it"), nor one maybe ("I'd be…")."""
    if f.modal is not None or f.negative:
        return False
    subject = f.parsed.words[f.clause.subject] if f.clause.subject is not None else None
    return not (f.past and subject is not None and subject.lower in ("i", "we"))


def _keen(f: Frame, comp: int, lemma: str) -> Reading | None:
    things = f.preps("at", "in", "with", "of", "about", "on", of=comp)
    if not things:
        return None
    topic = topic_of(f.parsed, things[0].i)
    if lemma in SKILLED:
        return _reading(f, "skill", skill_topic(f.parsed, things[0].i), things[0].i, 0.75)
    return _reading(f, "preference", topic, things[0].i, 0.75)


def status(f: Frame) -> Reading | None:
    """A change of status: "I got married last May", "we're engaged"."""
    if f.head.lower in STATUS and f.head.tag == "VBN" and f.kids("auxpass", "aux"):
        return _reading(f, "identity", "relationship-status", None, 0.85)
    return None
