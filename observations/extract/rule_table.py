"""Typing rules as data: each row a declarative trigger on a clause, what it gives, and its
own examples and counter-examples.

A row matches a clause when the clause states something (no question, condition or
hedge), its head's lemma is one of ``heads`` (any, when empty), it holds a value of the
row's type (:mod:`.values`: money, a dose; a bare number as the complement of "be"; or a
date, from :mod:`.dates`, as the complement of "be" or as the day another verb puts a thing
to or for) and the person the fact is about stands where ``person`` says:

* ``subject`` — the clause's subject is the person ("i'm on 48k", "i make 85k");
* ``object`` — someone else acts on the person ("they bumped me to 68k", "the doc put me
  on metformin"); a clause with no object but the value counts too ("they're paying 55k",
  said of one's own pay): it names nobody else;
* ``owned`` — the subject is a thing of the person's ("my rent is 1450 a month", "rent is
  900 a month"): the thing's noun completes the key, and without "my" an amount must be
  said with its period, which makes it a standing amount rather than a price once paid;
  a date, when the thing is said with "my" or bare ("annual review is a week from
  today"); with "the" only for a ``definite`` row, whose statement says the thing is on
  the person's calendar, not theirs (whose wedding is "the wedding"?).

A row is tried before the rules written as code (:mod:`.rules`), or, when ``last``, only
where none of them reads the clause. What a row gives is its kind, the key's attribute
(``{topic}``: the owned thing's topic; ``{name}``: the name said beside a dose), a
statement written from its template, and its confidence.
The first row that matches a clause gives its fact; :func:`matching_row` is the one
generic matcher, and the test suite runs every row's examples (each must give the row's
key) and counter-examples (none may) through the whole extractor, naming the row that
failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from observations.extract.analysis import Parsed, Word, known_word
from observations.extract.clauses import SUBJECTS, Clause
from observations.extract.dates import ResolvedDate
from observations.extract.frames import Frame
from observations.extract.references import mine
from observations.extract.values import Value, ValueType, typed_values
from observations.extract.vocabulary import words

Person = Literal["subject", "object", "owned"]
_ME = frozenset(("me", "us"))
_OBJECTS = ("dobj", "dative", "pobj")


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    heads: frozenset[str]  # the clause head's lemmas (empty: any verb)
    value: ValueType
    person: Person
    kind: str
    attribute: str  # the key's topic; "{topic}" the owned thing's, "{name}" the named thing
    template: str  # the statement: {person}, {thing} (the owned thing), {name}, {value}
    confidence: float
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]
    past: bool = False  # whether a past tense may say it ("the tickets were 40 quid": no)
    last: bool = False  # tried only where no rule of :mod:`.rules` reads the clause
    templated: bool = False  # stated from the template even when the clause names the person
    definite: bool = False  # an ``owned`` row's thing is said with "the", not "my" or bare


def _row(name: str, heads: str, value: ValueType, person: Person, gives: tuple[str, str, str],
         confidence: float, examples: Sequence[str], counter: Sequence[str],
         past: bool = False, last: bool = False, templated: bool = False,
         definite: bool = False) -> Row:  # fmt: skip
    kind, attribute, template = gives
    return Row(name, frozenset(heads.split()), value, person, kind, attribute, template,
               confidence, tuple(examples), tuple(counter), past, last, templated,
               definite)  # fmt: skip


_SALARY = ("identity", "salary", "{person} earns {value}.")
ROWS: tuple[Row, ...] = (
    _row("salary-on", "be", "money", "subject", _SALARY, 0.8,
         ["i'm on 60k now", "im on 48k which is way more than the old place"],
         ["i'm on 5k steps a day", "we're on 3 kids already"], templated=True),
    _row("salary-earned", "make earn", "money", "subject", _SALARY, 0.8,
         ["I make 85k", "I earn $4,000 a month", "i make 60k a year at the clinic"],
         ["I made 300 bucks at the yard sale", "I make pasta every friday"]),
    _row("salary-paid", "pay bump raise up", "money", "object", _SALARY, 0.8,
         ["they bumped me to 68k", "they're paying me 55k", "they're paying 55k"],
         ["i paid 2k for the car", "they're paying the builder 5k", "they offered me 70k"],
         past=True),
    _row("amount-owned", "be cost run", "money", "owned",
         ("identity", "{topic}", "{person}'s {thing} is {value}."), 0.8,
         ["rent is 1450 a month", "my mortgage is $900 a month", "my salary is 140k",
          "the rent is 1200 a month"],
         ["the tickets were 40 quid", "the ticket is 40 dollars", "my car was 6k",
          "my phone bill is a scam, 999 a month for nothing"]),
    _row("amount-changed", "go rise increase jump climb drop fall", "money", "owned",
         ("identity", "{topic}", "{person}'s {thing} goes up to {value}."), 0.8,
         ["rent goes up to 1450 a month from may", "my rent is going up to 1,600 a month",
          "my salary went up to 75k"],
         ["the price went up to 20 dollars", "my rent went up by 50 a month",
          "gas went up to 2 dollars a gallon"], past=True),
    _row("dose", "", "dose", "subject",
         ("constraint", "medication:{name}", "{person} takes {name} {value}."), 0.8,
         ["i'm on sitagliptin 100mg once a day now", "started on sertraline 50 mg",
          "i take 20mg of omeprazole every morning",
          "started levothyroxine 50 mcg this morning"],
         ["i drank 500ml of water", "the tablets come in 50mg and 100mg"], past=True),
    _row("dose-given", "", "dose", "object",
         ("constraint", "medication:{name}", "{person} takes {name} {value}."), 0.8,
         ["they put me on metformin, 500mg twice a day",
          "my gp started me on levothyroxine 50mcg", "she upped my sertraline to 100mg"],
         ["the pharmacy was out of ibuprofen 200mg", "they bumped my dose to 20mg"],
         past=True),
    _row("number-owned", "be", "number", "owned",
         ("identity", "{topic}", "{person}'s {thing} is {value}."), 0.8,
         ["my rent is 615 now", "my rent's 615 now", "my locker number is 4411",
          "my resting heart rate is 58"],
         ["my flight is 2 hours", "my rent is a lot", "my rent was 615",
          "my sister is 5", "the score is 3"], last=True),
    _row("plan-dated", "be", "date", "owned",
         ("event", "{topic}", "{person}'s {thing} is {value}."), 0.8,
         ["annual review is a week from today", "dentist appointment is on the 21st",
          "parents evening is next thursday", "my lease renewal form is due in 3 days",
          "my party is this coming saturday"],
         ["the weather is nice today", "the wedding is on the 21st", "my week was busy",
          "my birthday party was on the 2nd", "my form is late again today"], last=True),
    _row("plan-dated-the", "be", "date", "owned",
         ("event", "{topic}", "{person} has the {thing} {value}."), 0.75,
         ["the half marathon is the first sunday of march",
          "the investor pitch deck is due a week from today", "the wedding is on the 21st"],
         ["the weather is nice today", "the meeting was on monday",
          "the kids are at school on friday", "my review is on friday",
          "the full one is next year"],
         last=True, definite=True),
    _row("plan-moved", "push move schedule reschedule book postpone delay bring set", "date",
         "owned", ("event", "{topic}", "{person}'s {thing} is set for {value}."), 0.8,
         ["my cleaning got pushed to next month on the 3rd",
          "work offsite got scheduled for the last friday of the month",
          "my appointment was rescheduled to the 14th",
          "dr patel scheduled my hip replacement for november"],
         ["the meeting got pushed to friday", "my car got moved to the other lot",
          "my boss moved the deadline", "jess moved out 10 days ago"], past=True),
    _row("event-dated", "be", "date", "owned",
         ("event", "{topic}", "{person}'s {thing} was {value}."), 0.8,
         ["knee surgery was three weeks ago", "final fitting was yesterday"],
         ["the wedding was on the 21st", "my week was busy", "my day was long yesterday"],
         past=True, last=True),
)  # fmt: skip
FIRST_ROWS = tuple(row for row in ROWS if not row.last)
LAST_ROWS = tuple(row for row in ROWS if row.last)


@dataclass(frozen=True, slots=True)
class Match:
    row: Row
    value: Value
    thing: Word | None  # the owned noun ("rent"), for an ``owned`` row
    name: str | None  # the named thing beside a dose ("metformin")
    negative: bool  # the clause's polarity


def matching_row(
    frame: Frame,
    about: Person | None,
    owned: Word | None,
    dates: Sequence[ResolvedDate] = (),
    rows: Sequence[Row] = ROWS,
) -> Match | None:
    """The first row that matches the clause, given where the clause names its person:
    ``about`` is "subject" when its subject is the person, "object" when the person is
    acted on, "owned" when its subject is ``owned``, a thing of the person's; ``dates``
    are the date phrases of the clause's text."""
    if about is None:
        return None
    parsed, clause = frame.parsed, frame.clause
    values = typed_values(parsed, clause.words)
    said = (_date_complement(frame, dates), _number_complement(frame))
    values += [value for value in said if value is not None]
    for row in rows:
        if row.person != about or (row.heads and frame.lemma not in row.heads):
            continue
        if frame.past and not row.past:
            continue
        value = next((v for v in values if v.type == row.value), None)
        if value is None:
            continue
        if value.type == "money" and not _said_of_the_verb(frame, value):
            continue
        if row.person == "object" and _others_acted_on(parsed, clause, value):
            continue
        if row.person == "owned" and not _owned(parsed, owned, value, row.definite):
            continue
        named = "{name}" in row.attribute
        name = _named_with(parsed, clause, value) if named else None
        if named and name is None:
            continue
        return Match(row, value, owned, name, frame.negative)
    return None


def acted_on(parsed: Parsed, clause: Clause) -> bool:
    """Whether the speaker is acted on in the clause, or a thing of theirs is ("bumped
    me", "put me on", "cut my hours"), and its subject is someone or something else."""
    subject = parsed.words[clause.subject] if clause.subject is not None else None
    if subject is not None and subject.lower in ("i", "we"):
        return False
    for i in clause.words:
        word = parsed.words[i]
        if word.lower in _ME and word.dep in _OBJECTS:
            return True
        if word.lower in ("my", "our") and parsed.words[word.head].dep in _OBJECTS:
            return True
    return False


def _said_of_the_verb(frame: Frame, value: Value) -> bool:
    """An amount the clause's verb says, as its object or complement or through one
    preposition, after a particle or not ("rent is 1450", "i make 85k", "bumped me to
    68k", "rent goes up to 1450"), not one said of something else in it ("my phone bill
    is a scam, 999 a month for nothing")."""
    words = frame.parsed.words
    number = words[value.number]
    if number.head == frame.head.i:
        return True
    via = words[number.head]
    if via.dep not in ("prep", "dative") or via.lower == "by":  # "up by 50": a difference
        return False
    particle = words[via.head]  # "goes up to 1450": "to" hangs on "up"
    return via.head == frame.head.i or (
        particle.dep in ("advmod", "prt") and particle.head == frame.head.i
    )


def _others_acted_on(parsed: Parsed, clause: Clause, value: Value) -> bool:
    """Someone other than the speaker is the clause's object ("paying the builder 5k")."""
    for i in clause.words:
        word = parsed.words[i]
        if i in value.words or word.dep not in ("dobj", "dative") or word.lower in _ME:
            continue
        if mine(parsed, word):
            continue  # "upped my sertraline to 100mg": a thing of the speaker's
        if word.pos in ("NOUN", "PROPN", "PRON"):
            return True
    return False


def _owned(parsed: Parsed, thing: Word | None, value: Value, definite: bool = False) -> bool:
    """A value of a thing of the person's: said with "my"; an amount without it, with its
    period ("rent is 900 a month"); a date without it, bare ("annual review is friday").
    With ``definite``, a date of a thing said with "the" and no owner ("the half marathon
    is the first sunday of march"): on the person's calendar, whoever's it is."""
    if thing is None or thing.pos != "NOUN" or thing.tag in ("NNS", "NNPS"):
        return False
    if definite:  # not the pro-form "one", whose thing was said before ("the full one")
        the = [k.lower for k in parsed.kids(thing.i, "det")] == ["the"] and thing.lower != "one"
        return the and value.type == "date" and not parsed.kids(thing.i, "poss")
    if parsed.kids(thing.i, "poss"):
        return True
    if value.type == "date":
        return not parsed.kids(thing.i, "det")
    return value.periodic


_PUT_TO = ("to", "for", "till", "until")  # what puts a thing to a day ("pushed to friday")


def _date_complement(frame: Frame, dates: Sequence[ResolvedDate]) -> Value | None:
    """A date said as what "be" says of its subject ("my review is on 3 June", "annual
    review is a week from today", "the form is due in 3 days"), or as the day another verb
    puts its subject to or for ("my cleaning got pushed to the 3rd", "scheduled for
    friday"; not "jess moved out 10 days ago"): the first date phrase after the verb;
    after "be", nothing comes before it but a complement that holds it ("due"), and no
    other complement is said of the subject ("the weather is nice today")."""
    parsed, clause = frame.parsed, frame.clause
    after = [i for i in clause.words if i > frame.head.i and parsed.words[i].pos != "PUNCT"]
    for date in dates:
        inside = [i for i in after if date.span[0] <= parsed.words[i].start < date.span[1]]
        if not inside:
            continue
        first = inside[0]
        held = [
            a for a in frame.kids("acomp") if a.i not in inside and first not in parsed.subtree(a.i)
        ]
        lead = [i for i in after if i < first]
        if frame.lemma == "be" and (held or not _leads_to(parsed, lead, first)):
            return None
        said_with = (date.text.lower().split()[0], parsed.words[first - 1].lower)
        put = any(word in _PUT_TO for word in said_with)
        if frame.lemma != "be" and not put:
            return None
        said = date.phrase if frame.lemma == "be" else date.label  # "is on 3 June", "to 3 June"
        if lead and frame.lemma == "be":  # "due on 3 June"
            said, first = f"{parsed.words[lead[0]].text} {said}", lead[0]
        return Value("date", range(first, inside[-1] + 1), said, first, False)
    return None


def _number_complement(frame: Frame) -> Value | None:
    """A bare number said as what "be" says of its subject ("my rent is 615 now", "my
    locker is 4411"): the number is the complement itself, counting no noun ("my flight is
    2 hours") and with no unit a typed value would have."""
    if frame.lemma != "be" or frame.negative:
        return None
    for comp in frame.kids("attr", "acomp"):
        if comp.tag == "CD" and comp.text.replace(",", "").isdigit() and not frame.kids(of=comp.i):
            return Value("number", range(comp.i, comp.i + 1), comp.text, comp.i, False)
    return None


def _leads_to(parsed: Parsed, lead: Sequence[int], first: int) -> bool:
    """Nothing before the date, or one word whose phrase holds it ("due in 3 days")."""
    return not lead or (len(lead) == 1 and first in parsed.subtree(lead[0]))


_MEDICINE_WORDS = words("dose dosage med meds medication medicine pill tablet prescription")


def _named_with(parsed: Parsed, clause: Clause, value: Value) -> str | None:
    """The thing a dose is of: the noun right before it ("sitagliptin 100mg"), the object
    of "on" ("put me on metformin, 500mg"), what "of" follows it with ("20mg of
    omeprazole"), or the speaker's thing a dose is put "to" ("upped my sertraline to
    100mg")."""
    words = parsed.words
    via = words[words[value.words.stop - 1].head]  # "to 100mg", "to 100 mg"
    if via.lower == "to":
        for thing in parsed.kids(via.head, "dobj"):  # a name, not "my dose", "my meds"
            if mine(parsed, thing) and thing.lemma not in _MEDICINE_WORDS:
                return thing.lower
    after = value.words.stop
    of = after + 1 < len(words) and words[after].lower == "of" and after + 1 in clause.words
    if of and words[after + 1].pos in ("NOUN", "PROPN"):
        return words[after + 1].lower
    before = value.words.start - 1
    while before >= 0 and words[before].pos == "PUNCT":
        before -= 1
    if before in clause.words and words[before].lower not in _ME:
        word = words[before]
        # a noun, or a name the tagger did not know and took for an adjective or a verb
        unknown = word.pos in ("ADJ", "VERB") and word.text.isalpha() and not known_word(word.lower)
        if word.pos in ("NOUN", "PROPN") or unknown:
            return word.lower
    return None


def person_in(parsed: Parsed, clause: Clause) -> Person | None:
    """Where a clause whose subject is no person names the speaker for the rows: acted
    on ("object"), or not at all."""
    if acted_on(parsed, clause) or _no_other(parsed, clause):
        return "object"
    return None


def _no_other(parsed: Parsed, clause: Clause) -> bool:
    """A clause whose subject is "they" (an employer, a clinic) and that names no one
    acted on: "they're paying 55k"."""
    if clause.subject is None:
        return False
    subject = parsed.words[clause.subject]
    return subject.lower == "they" and subject.dep in SUBJECTS
