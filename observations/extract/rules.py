"""The fact rules: a clause's frame → kind, key topic, value and polarity.

Keys are ``<kind>:<topic>`` where the topic comes from the parse (:mod:`.topics`):

* preference:<topic> — love/like/enjoy/prefer/hate…, "a fan of", "into", "my favorite X
  is" (topic X); liking and disliking share the key, the polarity tells them apart;
* identity:<attribute> — occupation, employer, city, origin, car, name, age, education,
  gender, orientation, relationship-status, parent (one value each: a new value
  supersedes the old whatever the words);
* constraint:diet (vegetarian, vegan…), constraint:allergy:<thing>, constraint:diet:<food>
  ("don't eat meat"), constraint:<verb>[-<noun>] ("can't travel on Sundays");
* relationship:<role>[:<name>] ("I have a sister named Lena");
* skill:<topic> — know, speak, learn, good at, "have been painting for years";
* goal:<verb>[-<noun>] — want/plan/hope/would like/going to, "my goal is to";
* experience:<verb>[-<noun>] — any other action of the person with an object.

Negation is the reading's polarity: "I'm no longer vegetarian" is constraint:diet,
negative, so it supersedes "vegetarian". The rules for states ("I'm …", "my … is …") are
in :mod:`.states`; the first rule that reads a clause decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from observations.extract.analysis import Word, known_noun, known_word
from observations.extract.clauses import GO
from observations.extract.frames import Frame, Reading
from observations.extract.frames import reading as _reading
from observations.extract.references import mine
from observations.extract.states import (
    about_a_job,
    attribute,
    away,
    copula,
    ending,
    naming,
    scheduled,
    status,
)
from observations.extract.topics import (
    activity_topic,
    concrete,
    first_object,
    lemma_of,
    noun_topic,
    part,
    role,
    skill_topic,
    topic_of,
    verb_noun,
)
from observations.extract.vocabulary import (
    ABSTRACT,
    AILMENTS,
    CAR_NAMES,
    COFFEE_DRINKS,
    COMINGS_AND_GOINGS,
    CONSUMABLES,
    DISLIKE,
    FOODS,
    GETTING,
    JOBS,
    LANGUAGES,
    LET_GO,
    LIKE,
    ROLES,
    SETTINGS,
    TIME_NOUNS,
    TRYING,
    VAGUE,
    VEHICLES,
    WANT,
    words,
)

Rule = Callable[[Frame], Reading | None]
DATED_ONLY = "dated-only"  # a reading that says something only with the clause's date
_NOT_ACTIONS = words(
    """be think guess know mean feel hope wish wonder agree bet suppose believe imagine
    remember forget understand seem look sound let thank appreciate tell ask say talk chat
    reply answer congratulate apologize apologise promise need want miss check keep
    realize realise notice mind glad love like enjoy prefer hate see hear wait swear"""
)


def called(f: Frame) -> Reading | None:
    """The name one goes by: "everyone calls me Lexi", "I go by Alexandra now"."""
    if f.lemma == "call" and any(k.lower == "me" for k in f.kids("dobj", "dative", "nsubj")):
        names = f.kids("oprd", "xcomp", "attr") or f.kids("dobj")[1:]
        return _reading(f, "identity", "name", names[0].i, 0.85) if names else None
    if f.lemma == "go" and f.preps("by"):
        return _reading(f, "identity", "name", f.preps("by")[0].i, 0.85)
    return None


def liking(f: Frame) -> Reading | None:
    """A liking: "I love strong black coffee", "I prefer aisle seats", "I can't stand cilantro"."""
    stand = f.lemma == "stand" and f.modal == "can" and f.negative
    always = f.lemma == "want" and f.xcomp() is None and f.kids("dobj")  # "I always want the aisle"
    if (f.lemma not in LIKE | DISLIKE and not (stand or always)) or f.past:
        return None
    if f.modal not in (None, "can"):
        return None
    if f.modal == "can" and not stand:
        return None  # "I can enjoy nature": a possibility, not a liking
    things = [w for dep in ("dobj", "xcomp", "attr", "advmod") for w in f.kids(dep)]
    thing = next((w for w in things if w.pos not in ("ADV", "PRON") or _misread(w)), None)
    if thing is None:
        return None
    negative = f.negative != (f.lemma in DISLIKE or stand)
    topic = topic_of(f.parsed, thing.i)
    return Reading("preference", topic, thing.i, f.lemma, 0.75, negative)


def work(f: Frame) -> Reading | None:
    """Work: "I work as a nurse at St. Mary's", "I started a new job as an analyst at Google"."""
    anchor = f.head.i
    if f.lemma != "work":
        jobs = [o for o in f.kids("dobj") if o.lemma in JOBS]
        if not jobs and f.lemma in ("start", "begin"):
            return _started_at(f)
        if not jobs or f.lemma not in ("start", "get", "land", "take", "accept", "have", "begin"):
            return None
        anchor = jobs[0].i
    elif f.past:
        return None
    for role_word in f.preps("as", of=anchor) + f.preps("as"):
        return _reading(f, "identity", "occupation", role_word.i, 0.9)
    for employer in f.preps("at", "for", "with", of=anchor) + f.preps("at", "for", "with"):
        return _reading(f, "identity", "employer", employer.i, 0.85)
    return None


def _started_at(f: Frame) -> Reading | None:
    """ "I quit the bakery job, started at a vet clinic": starting "at" a place, in a
    sentence about a job, is starting work there; not "started at 9", "started at home",
    "started at the weekend", nor without a job named ("started at the bottom")."""
    if f.negative or not about_a_job(f):
        return None
    for found in f.preps("at"):
        if found.pos not in ("PROPN", "NOUN") or found.tag in ("NNS", "NNPS"):
            continue
        if found.lemma in SETTINGS or found.lemma in TIME_NOUNS:
            continue
        return _reading(f, "identity", "employer", found.i, 0.75)
    return None


def place(f: Frame) -> Reading | None:
    """Where one lives or comes from: "I live in Lisbon", "we moved to Amsterdam"."""
    if f.lemma in ("live", "reside") and not f.past:
        found = f.preps("in")
        return _reading(f, "identity", "city", found[0].i, 0.8) if found else None
    if f.lemma in ("stick", "base", "settle", "locate") and f.head.tag == "VBN":
        found = f.preps("in")  # "I'm stuck in Prague", "we're settled in Leeds now"
        return _reading(f, "identity", "city", found[0].i, 0.75) if found else None
    if f.lemma in ("move", "relocate"):
        if f.subject_noun is not None or f.kids("auxpass", "nsubjpass", "dobj"):
            return None  # "my interview got moved to friday", "moved my return flight to
            # the 7th": a thing moved, not a home
        found = f.preps("to")
        return _reading(f, "identity", "city", found[0].i, 0.8) if found else None
    origin = {"come": ("from",), "grow": ("in",), "bear": ("in",), "raise": ("in",)}
    if f.lemma in origin:
        found = f.preps(*origin[f.lemma])
        return _reading(f, "identity", "origin", found[0].i, 0.85) if found else None
    return None


def study(f: Frame) -> Reading | None:
    """What one studies, or the school or programme one got into: "I study law", "got into
    the masters program at edinburgh", "I was admitted to Stanford"."""
    if f.lemma in ("get", "accept", "admit") and not f.negative and f.modal is None:
        found = [p for p in f.preps("into", "to") if p.lemma in _SCHOOLS or p.pos == "PROPN"]
        places = found if f.lemma != "get" else [p for p in found if p.lemma in _SCHOOLS]
        return _reading(f, "identity", "education", places[0].i, 0.75) if places else None
    if f.lemma not in ("study", "major"):
        return None
    found = f.kids("dobj") or f.preps("in")
    return _reading(f, "identity", "education", found[0].i, 0.75) if found else None


_SCHOOLS = frozenset(
    ("program", "programme", "university", "uni", "college", "school", "course", "phd",
     "masters", "master", "degree", "academy", "bootcamp")
)  # fmt: skip


def vehicle(f: Frame) -> Reading | None:
    """A car: "I drive a Tesla", "I bought a new car", "picked up a used golf"."""
    cars = f.kids("dobj")
    picked_up = f.lemma == "pick" and any(w.lower == "up" for w in f.kids("prt"))
    if not cars or (
        f.lemma not in ("drive", "own", "buy", "get", "lease", "have") and not picked_up
    ):
        return None
    car = cars[0]
    named = any(f.parsed.words[i].lower in CAR_NAMES for i in f.parsed.subtree(car.i))
    if f.lemma != "drive" and car.lemma not in VEHICLES and not named:
        return None
    if car.pos not in ("NOUN", "PROPN") or car.lemma in ROLES:
        return None  # whom one drives ("i'm driving her", "driving my mum to the airport"),
        # or no thing at all ("drove out to her place sunday, mom's good": "good")
    return _reading(f, "identity", "car", car.i, 0.8)


_QUIT = frozenset(("quit", "leave", "lose"))  # what ends one's job


def parting(f: Frame) -> Reading | None:
    """The end of what a profile row holds, said as what happened to it, filed under the
    attribute it ends, so the newer fact supersedes the older whatever its words: a
    partner ("we split up", "i broke up with priya": the partner; its value says so), a
    car ("sold the corolla", "totaled my car"), a job ("i quit my job", "lost my job"). Not
    what did not happen, nor another's ("the band broke up" has no person for subject).
    Being with someone no longer ("not with dana anymore") ends the partner too."""
    if f.modal is not None or f.subject_noun is not None:
        return None
    if f.negative and f.lemma == "be" and _no_longer(f):
        people = [w for w in f.preps("with") if _someone(f, w)]
        return _reading(f, "relationship", "partner", people[0].i, 0.8) if people else None
    if f.negative:
        return None
    up = any(k.lower == "up" for k in f.kids("prt"))
    if f.lemma in ("break", "split") and up:
        return _reading(f, "relationship", "partner", None, 0.8)
    objects = f.kids("dobj")
    if not objects:
        return None
    thing = objects[0]
    named = any(f.parsed.words[i].lower in CAR_NAMES for i in f.parsed.subtree(thing.i))
    if f.lemma in LET_GO and (thing.lemma in VEHICLES or named):
        return _reading(f, "identity", "car", None, 0.8)
    if f.lemma in _QUIT and thing.lemma in JOBS and mine(f.parsed, thing):
        return _reading(f, "identity", "employer", None, 0.8)
    return None


def _someone(f: Frame, word: Word) -> bool:
    """A person by name ("Dana", "dana": a bare noun that is no setting) or by role."""
    if word.pos == "PROPN" or word.lemma in ROLES:
        return True
    bare = word.pos == "NOUN" and not f.kids("det", "poss", "amod", of=word.i)
    return bare and lemma_of(word) not in SETTINGS | ABSTRACT | TIME_NOUNS


def _no_longer(f: Frame) -> bool:
    """ "no longer …", "not … anymore": what held and holds no more."""
    said = {f.parsed.words[i].lower for i in f.clause.words}
    return bool(said & {"anymore", "longer"})


def reporting(f: Frame) -> Reading | None:
    """Whom one reports to is one's manager ("i report to wren akintola now", "reporting
    to Dana since the reorg"): the manager's attribute, so it ends the manager said
    before ("my manager is teodor"); not a place or a body ("report to the front desk",
    "report to HR")."""
    if f.lemma != "report" or f.negative or f.modal is not None or f.subject_noun is not None:
        return None
    for who in f.preps("to"):
        if f.kids("det", of=who.i) or who.tag in ("NNS", "NNPS") or who.lemma in ROLES:
            continue
        if who.pos == "PROPN" or (who.text.isalpha() and not known_noun(who.lower)):
            return _reading(f, "relationship", "manager", who.i, 0.8)
    return None


def kin(f: Frame) -> Reading | None:
    """Kin and pets: "I have a sister named Lena", "we adopted a puppy"."""
    if f.lemma not in GETTING:
        return None
    for found in f.kids("dobj"):
        if found.lemma in ROLES:
            name = _given_name(f, found.i)
            topic = role(found) + (f":{name}" if name else "")
            return _reading(f, "relationship", topic, found.i, 0.8)
    return None


def _given_name(f: Frame, noun: int) -> str | None:
    for word in f.kids("appos", "acl", of=noun):
        if word.pos == "PROPN":
            return word.lower
        named = f.kids("oprd", of=word.i)
        if word.lemma in ("name", "call") and named:
            return named[0].lower
    return None


def skill(f: Frame) -> Reading | None:
    """A skill: "I know Rust", "I speak French", "I'm learning italian", "I can swim",
    "I've been painting for years"; a language given up ("gave up on spanish", "quit
    spanish") is the same key said the other way."""
    dropped = _language_given_up(f)
    if dropped is not None:
        return Reading("skill", noun_topic(f.parsed, dropped.i), dropped.i, "learn", 0.75, True)
    if f.lemma in ("know", "speak", "learn") and not f.negative:
        how = f.xcomp()
        if how is not None:
            return _reading(f, "skill", skill_topic(f.parsed, how.i), how.i, 0.75)
        things = [
            o for o in f.kids("dobj")
            if (o.pos in ("PROPN", "NOUN") or o.lower in LANGUAGES) and o.lemma not in VAGUE
        ]  # fmt: skip
        if things and (f.lemma != "know" or things[0].pos == "PROPN"):
            return _reading(f, "skill", noun_topic(f.parsed, things[0].i), things[0].i, 0.75)
    practised = any(p.lemma in ("year", "decade") for p in f.preps("for"))
    if f.head.tag == "VBG" and any(k.lower == "been" for k in f.kids("aux")) and practised:
        return _reading(f, "skill", activity_topic(f.parsed, f.head.i), None, 0.75)
    return None


def _language_given_up(f: Frame) -> Word | None:
    """The language of "gave up on spanish", "quit spanish", "stopped learning spanish"."""
    up = any(k.lower == "up" for k in f.kids("prt"))
    if f.lemma == "give" and up:
        found = f.preps("on") or f.kids("dobj")
    elif f.lemma in _QUITTING or f.lemma == "drop":
        learning = [k for k in f.kids("xcomp") if k.lemma == "learn"]
        found = f.kids("dobj", of=learning[0].i) if learning else f.kids("dobj")
    else:
        return None
    return next((w for w in found if w.lower in LANGUAGES), None)


def constraint(f: Frame) -> Reading | None:
    """A constraint: "I can't travel on Sundays", "I don't eat meat", "I avoid gluten", "I
    get carsick on gravel roads" (a condition one gets, or is)."""
    for state in f.kids("acomp"):
        if (f.lemma in ("get", "feel") or f.copula) and state.lower in AILMENTS:
            return _reading(f, "constraint", f"health:{state.lower}", state.i, 0.8)
    if f.lemma in ("eat", "drink") and not f.past:
        things = f.kids("dobj")
        if things and f.negative:
            topic = f"diet:{noun_topic(f.parsed, things[0].i)}"
            return _reading(f, "constraint", topic, things[0].i, 0.8)
        if f.lemma == "drink" and f.negative and f.modal is None and not f.kids("prep"):
            return _reading(f, "constraint", "diet:alcohol", None, 0.8)  # "i don't drink"
    if f.lemma == "avoid" and f.kids("dobj"):
        thing = f.kids("dobj")[0]
        topic = noun_topic(f.parsed, thing.i)
        topic = f"diet:{topic}" if thing.lemma in FOODS else topic
        return Reading("constraint", topic, thing.i, "avoid", 0.75, True)
    if f.modal == "can" and f.negative and f.head.pos == "VERB" and f.lemma not in _NOT_ACTIONS:
        told = f.parsed.kids(f.head.i, "dobj", "ccomp", "prep")
        if f.lemma == "help" and (f.parsed.kids(f.head.i, "cc") or not told):
            return None  # "I can't help but smile", "can't help smiling": no constraint
        return _reading(f, "constraint", verb_noun(f.parsed, f.head.i), None, 0.75)
    return None


_TAKING = words("drink have eat smoke")
_QUITTING = words("quit stop")
_HABITS = words("smoking vaping")  # "I quit smoking": the habit is the activity


def taking(f: Frame) -> Reading | None:
    """A habit of taking something ("I drink 4 flat whites a day", "I have tea every
    morning", "I switched to decaf") and its end ("I quit coffee", "I stopped drinking
    soda", "I gave up sugar", "I quit smoking"): a preference for what is taken, every
    coffee drink being coffee, so that quitting is the same key said the other way and
    supersedes the habit. "Have" is a habit only when said with how often ("I have bread"
    is no liking)."""
    if f.modal is not None:
        return None
    if f.lemma == "switch":  # "I switched to decaf": what one takes now
        things = [o for p in f.kids("prep") if p.lower == "to" for o in f.kids("pobj", of=p.i)]
        return _taken(f, things, negative=False)
    up = any(k.lower == "up" for k in f.kids("prt"))
    quitting = f.lemma in _QUITTING or (f.lemma == "give" and up)
    if not quitting and (f.lemma not in _TAKING or f.past):
        return None
    if f.lemma == "have" and not _how_often(f):
        return None
    done = next((k for k in f.kids("xcomp") if k.tag == "VBG"), None) if quitting else None
    verb = done if done is not None and done.lemma in _TAKING else f.head
    # "drink like 4 flat whites": the filler "like" is parsed as a preposition
    like = [
        o for p in f.kids("prep", of=verb.i) if p.lower == "like" for o in f.kids("pobj", of=p.i)
    ]
    things = f.kids("dobj", of=verb.i) or like or ([done] if done is not None else [])
    return _taken(f, things, negative=quitting or f.negative)


def _taken(f: Frame, things: list[Word], negative: bool) -> Reading | None:
    topic = _consumed(f, things[0]) if things else None
    if topic is None:
        return None
    return Reading("preference", topic, things[0].i, f.lemma, 0.75, negative)


_OFTEN = words("day daily morning mornings night nights week usually always often every regularly")


def _how_often(f: Frame) -> bool:
    return any(f.parsed.words[i].lower in _OFTEN for i in f.clause.words)


def _consumed(f: Frame, thing: Word) -> str | None:
    """What is taken, as a topic: coffee for any coffee drink, the habit for "smoking";
    None for anything else."""
    if thing.lower in _HABITS:
        return thing.lower
    lemma = thing.lemma
    mods = {k.lower for k in f.kids("amod", "compound", of=thing.i)}
    if lemma in COFFEE_DRINKS and (lemma not in ("white", "brew") or mods & {"flat", "cold"}):
        return "coffee"
    return lemma if lemma in CONSUMABLES else None


def goal(f: Frame) -> Reading | None:
    """A goal: "I want to learn to sail", "I'd love to visit Japan", "I'm planning to run…"."""
    action = f.xcomp()
    if action is None or action.pos != "VERB":
        return None
    wants = f.lemma in WANT or (f.modal == "would" and f.lemma in LIKE)
    planning = f.head.tag == "VBG" and (f.lemma in TRYING or f.lemma == "go")
    to = any(k.tag == "TO" for k in f.kids("aux", of=action.i))
    if not (wants or planning) or f.past or not to:
        return None
    if f.parsed.words[action.i].lemma in _NOT_ACTIONS or not concrete(f.parsed, action.i):
        return None
    return _reading(f, "goal", verb_noun(f.parsed, action.i), action.i, 0.75)


def searching(f: Frame) -> Reading | None:
    """A search under way: "I'm still looking into counseling jobs", "we've been looking
    for a bigger place"; not one over ("I was looking for my keys"), nor "looking at"."""
    if f.lemma != "look" or f.head.tag != "VBG" or f.past or f.negative or f.modal is not None:
        return None
    things = [w.i for w in f.preps("into", "for") if w.pos in ("NOUN", "PROPN")]
    found = first_object(f.parsed, f.head.i)
    if found not in things or f.parsed.words[found].lemma == "while":
        return None  # "looking for a while"
    if not concrete(f.parsed, f.head.i):
        return None
    return _reading(f, "experience", verb_noun(f.parsed, f.head.i), None, 0.7)


def happened(f: Frame) -> Reading | None:
    """What happened to a thing of the person's, said of the thing ("my bike was stolen",
    "my car broke down", "my flight got cancelled"): an experience of its owner. Not of a
    relative (a person: their own facts), nor of something abstract ("my day went well")."""
    noun = f.subject_noun
    if noun is None or noun.lemma in ROLES or f.head.pos != "VERB" or f.negative:
        return None
    if not f.past or f.modal is not None or f.kids("dobj") or f.lemma in _NOT_ACTIONS:
        return None
    if noun.pos != "NOUN" or lemma_of(noun) in ABSTRACT | TIME_NOUNS:
        return None
    return _reading(f, "experience", f"{part(f.lemma)}-{topic_of(f.parsed, noun.i)}", None, 0.6)


def action(f: Frame) -> Reading | None:
    """Any other action of the person with an object: an experience ("I tried sushi")."""
    if f.head.pos != "VERB" or f.lemma in _NOT_ACTIONS or f.modal not in (None, "will"):
        return None
    if f.subject_noun is not None or (f.head.tag == "VB" and f.modal is None and not f.kids("aux")):
        return None  # "my experience brought me…", or no tense
    topic = verb_noun(f.parsed, f.head.i)
    phrasal = None if "-" in topic else _phrasal(f)
    if "-" not in topic:
        topic = _outing(f) or phrasal or topic
    kind = "goal" if f.modal == "will" else "experience"
    if "-" not in topic and f.lemma in COMINGS_AND_GOINGS and not f.kids("dobj"):
        # "my brother's visiting in 10 days", "we arrive on the 3rd": nothing unless dated
        return replace(_reading(f, kind, part(f.lemma), None, 0.6), rule=DATED_ONLY)
    if "-" not in topic or not concrete(f.parsed, f.head.i):
        return None
    # a particle's meaning without an object ("I gave up") is vaguer unless a date ties it
    return _reading(f, kind, topic, None, 0.6 if topic == phrasal else 0.7)


_WHERE_ONE_IS = words("on at with off")


def standing(f: Frame) -> Reading | None:
    """Where or on what the person is, said with "be" and a preposition no rule types
    ("I'm on ozempic now", "I'm on nights at St. Luke's", "she's with Hale Studio now"):
    an experience, believed only when what it names is specific: a name or a word the
    lemmatizer's tables do not know (a drug, a brand); "I'm at the gym" is not."""
    if f.lemma != "be" or f.modal not in (None, "will") or f.comps() or f.subject_noun:
        return None
    vague = ABSTRACT | TIME_NOUNS | VAGUE | SETTINGS  # not "at the gym", "at home"
    found = [w for w in f.preps(*_WHERE_ONE_IS) if w.pos in ("NOUN", "PROPN")]
    found = [w for w in found if lemma_of(w) not in vague]
    if not found:
        return None
    said = [f.parsed.words[i] for i in f.clause.words if i > f.head.i]
    # a number is no such name: it is a value that changes ("on 71,500 base"), which an
    # untyped fact would keep as current after the change
    specific = any(w.pos == "PROPN" or _unknown(w) for w in said)
    topic = f"be-{topic_of(f.parsed, found[0].i)}"
    return _reading(f, "experience", topic, None, 0.7 if specific else 0.6)


def _unknown(word: Word) -> bool:
    """A word the lemmatizer's tables do not know ("ozempic", "hokas")."""
    lower = word.lower
    if word.pos not in ("NOUN", "ADJ") or not lower.isalpha() or len(lower) < 4:
        return False
    return not known_noun(lower) and not known_word(lower)


def _misread(word: Word) -> bool:
    """An object the tagger took for an adverb: a noun, or a word its tables do not know
    ("i love cilantro": RBS)."""
    lower = word.lower
    thing = known_noun(lower) or not (known_word(lower) or lower.endswith("ly"))
    return word.dep == "dobj" and word.pos == "ADV" and lower.isalpha() and thing


def _phrasal(f: Frame) -> str | None:
    """A verb whose particle makes its meaning, with no object ("I moved out last weekend",
    "we signed up"): ``<verb>-<particle>``."""
    particles = [k.lower for k in f.kids("prt")]
    return f"{part(f.lemma)}-{particles[0]}" if particles and not f.kids("dobj") else None


def _outing(f: Frame) -> str | None:
    """ "went fishing", "we're going camping": ``go-<activity>``, the activity being the fact
    (also when the parse makes "went" an auxiliary of "fishing")."""
    if f.head.tag == "VBG" and any(a.lower in GO for a in f.kids("aux")):
        return f"go-{activity_topic(f.parsed, f.head.i)}"
    if f.lemma != "go" or f.kids("dobj"):
        return None
    done = [k for k in f.kids("xcomp") if k.tag == "VBG" and k.pos == "VERB"]
    return f"go-{activity_topic(f.parsed, done[0].i)}" if done else None


def off_to(f: Frame) -> Reading | None:
    """ "I'm off to go swimming with the kids": on one's way to an activity."""
    if f.lemma != "be" or f.negative or f.modal is not None or f.past:
        return None
    if not any(k.lower == "off" for k in f.kids("advmod")):
        return None
    go = f.xcomp()
    if go is None or go.lemma != "go" or f.kids("dobj", of=go.i):
        return None
    done = [k for k in f.kids("xcomp", of=go.i) if k.tag == "VBG" and k.pos == "VERB"]
    if not done:
        return None
    return _reading(f, "experience", f"go-{activity_topic(f.parsed, done[0].i)}", None, 0.7)


RULES: tuple[Rule, ...] = (
    attribute,
    scheduled,
    ending,
    away,
    naming,
    copula,
    called,
    status,
    parting,
    reporting,
    goal,
    liking,
    work,
    place,
    study,
    vehicle,
    kin,
    skill,
    constraint,
    taking,
    searching,
    off_to,
    standing,
    happened,
    action,
)


def read(f: Frame) -> Reading | None:
    """The first rule's reading of the clause, if any rule reads it."""
    for rule in RULES:
        found = rule(f)
        if found is not None:
            return found
    return None
