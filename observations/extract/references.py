"""Whom the words of a turn mean: pronouns, names and "my sister Lena".

First person is the speaker ("we" too: a fact the speaker states about their household is
theirs); "you" is the turn's addressee when that is a human member, and means nobody a
fact can be about when it is the assistant. "he"/"she"/"him"/"her" mean the one person
the turn named before them (a member, a relation such as "my sister Lena", or a named
person); in a turn that named nobody, the one person named in the last few turns ("my
cousin is staying with me" … "she's a vet tech"), unless the role says otherwise ("my
brother" is no "she"); never the speaker, who says "I"; and nobody when there were none
or several. "they"/"their" mean
the one group of relations of the speaker or the addressee named in the last few turns
("my dogs", "your kids", "the kids"), when no other plural noun stands before them in the
sentence.
Everything else that only points — "it", "that", "something", "there" — means nobody: a
clause whose subject or object is such a word is no fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from observations.extract.analysis import Parsed, Word, as_name, known_adjective, known_noun
from observations.extract.people import Cast, Person
from observations.extract.topics import name_of, role
from observations.extract.vocabulary import (
    DAYS_NAMED,
    FAMILY,
    FEMININE,
    MASCULINE,
    ROLES,
    TIME_NOUNS,
    TITLES,
    words,
)

FIRST = words("i me my mine myself we us our ours ourselves")
SECOND = words("you your yours yourself yourselves")
THIRD = words("he him his himself she her hers herself")
THEY = words("they their")
_FEMININE_PRONOUNS = words("she her hers herself")
POINTING = words(
    """it its itself they them their theirs themselves this that these those something
    someone somebody anything anyone anybody everything everyone stuff one there here"""
)
CORE = words("nsubj nsubjpass dobj pobj attr dative oprd appos conj csubj")
_REFLEXIVE = frozenset(("myself", "yourself", "himself", "herself", "ourselves"))
_POSSESSIVE = frozenset(("my", "mine", "our", "ours", "your", "yours", "his", "hers"))

Kind = Literal["self", "member", "relation", "outsider"]


@dataclass(frozen=True, slots=True)
class Referent:
    """A person a phrase means, and how a statement names them."""

    kind: Kind
    name: str  # "Maya Chen", "Maya Chen's sister Lena", "Lena"
    person: Person | None = None  # the member (self, member), or whose relation it is
    role: str | None = None  # a relation's role ("sister")
    given: str | None = None  # a relation's or a named person's own name ("lena")
    called: str | None = None  # the relation's role as said ("mom", "boss")

    @property
    def possessive(self) -> str:
        return possessive(self.name)

    @property
    def short(self) -> str:
        """How a pronoun for them is written: a relation by its given name when it has one
        ("Lena" rather than "Maya Chen's sister Lena")."""
        return self.name.split()[-1] if self.kind == "relation" and self.given else self.name


@dataclass(slots=True)
class Heard:
    """What a session's turns have named so far, for the turns after them."""

    roles: dict[str, str] = field(default_factory=dict)  # a relation's given name → role
    # each member's latest group of relations ("my dogs") and the turn it was named in
    groups: dict[str, tuple[Referent, int]] = field(default_factory=dict)
    kin: set[tuple[str, str]] = field(default_factory=set)  # (member id, role) named
    # each third person named by one, with the latest turn that named them
    people: dict[str, tuple[Referent, int]] = field(default_factory=dict)
    # relations earlier sessions named by their given name → (whose relation, role)
    earlier: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(slots=True)
class Speech:
    """One turn: who speaks, to whom, and the third persons it has named so far."""

    speaker: Person
    addressee: Person | None
    cast: Cast
    named: list[Referent] = field(default_factory=list)
    heard: Heard = field(default_factory=Heard)  # the session's, shared by its turns
    relations: list[Referent] = field(default_factory=list)  # named relations ("my sister Lena")
    seq: int = 0  # the turn's place in the session

    @property
    def me(self) -> Referent:
        return Referent("self", self.speaker.name, self.speaker)

    def you(self) -> Referent | None:
        person = self.addressee
        if person is None or person.assistant:
            return None
        return Referent("member", person.name, person)

    def third(self, lower: str) -> Referent | None:
        """The one third person named so far in the turn ("my sister Lena" and "Lena" are
        one), or when it named nobody, in the last few turns of the session, if the
        pronoun ``lower`` can mean them."""
        people = {r.given or r.name: r for r in self.named if self._third(r)}
        if not people:
            heard = self.heard.people.items()
            people = {
                k: r for k, (r, seq) in heard if self.seq - seq <= _RECENT_TURNS and self._third(r)
            }
            if len(people) == 1 and not _fits(next(iter(people.values())), lower):
                return None
        return next(iter(people.values())) if len(people) == 1 else None

    def _third(self, referent: Referent) -> bool:
        """Whether a third person's pronoun can mean the referent: not the assistant, and
        not the speaker, who says "I" ("she's in kinsale now" said by Tom is never Tom)."""
        speaker = referent.kind == "member" and referent.person == self.speaker
        return not _the_assistant(referent) and not speaker

    def group(self) -> Referent | None:
        """The one group of relations of the speaker or the addressee named in the last
        few turns ("my dogs", "your kids"): whom "they" can mean."""
        you = self.you()
        people = [self.speaker, *([you.person] if you is not None and you.person else [])]
        found = [self.heard.groups.get(p.actor_id) for p in people]
        recent = [g for g, seq in filter(None, found) if self.seq - seq <= _RECENT_TURNS]
        return recent[0] if len(recent) == 1 else None

    def note(self, referent: Referent, plural: bool = False) -> None:
        owner = referent.person if referent.kind == "relation" else None
        if owner is not None and referent.role:
            self.heard.kin.add((owner.actor_id, referent.role))
        if plural and owner is not None and not referent.given:
            self.heard.groups[owner.actor_id] = (referent, self.seq)
        known = {r.given or r.name for r in self.named}
        single = referent.kind != "self" and not plural
        if single and (referent.given or referent.name) not in known:
            self.named.append(referent)
        if single:
            self.heard.people[referent.given or referent.name] = (referent, self.seq)
        if referent.kind == "relation" and referent.given and referent.role:
            if referent.given not in self.heard.roles and referent.called:
                self.relations.append(referent)
            self.heard.roles[referent.given] = referent.role


def _the_assistant(referent: Referent) -> bool:
    """The assistant, named in a turn ("moss find me curtains"): never a "he" or "she" a
    fact can be about."""
    return referent.person is not None and referent.person.assistant


def pronoun(word: Word, speech: Speech) -> Referent | None:
    """Whom a personal pronoun means (None: nobody a fact can be about)."""
    lower = word.lower
    if lower in FIRST:
        return speech.me
    if lower in SECOND:
        return speech.you()
    if lower in THIRD:
        return speech.third(lower)
    return None


def _fits(referent: Referent, lower: str) -> bool:
    """Whether "she" or "he" (``lower``, any of their forms) can mean the referent: not a
    relation called or known by a word of the other ("my brother" is no "she")."""
    other = MASCULINE if lower in _FEMININE_PRONOUNS else FEMININE
    return (referent.called or referent.role) not in other


def they(parsed: Parsed, word: Word, speech: Speech) -> Referent | None:
    """The group "they" or "their" means ("them" is as often a thing); None when none or
    several could be meant, or another plural noun stands before it in the sentence ("my
    dogs love the parks, they are huge")."""
    if word.lower not in THEY or word.pos not in ("PRON", "DET"):
        return None
    group = speech.group()
    if group is None:
        return None
    before = range(word.i)
    plural = [parsed.words[i] for i in before if parsed.words[i].tag in ("NNS", "NNPS")]
    return None if any(w.lower != group.called for w in plural) else group


def is_pronoun(word: Word) -> bool:
    lower = word.lower
    personal = lower in FIRST | SECOND | THIRD and word.pos in ("PRON", "DET")
    return personal or (lower in POINTING and word.pos in ("PRON", "DET", "ADV", "NOUN"))


def written(word: Word, referent: Referent) -> str:
    """How a pronoun is written once resolved: a name, a possessive, "themself"."""
    lower = word.lower
    if lower in _REFLEXIVE:
        return "themself"
    if lower in _POSSESSIVE or (lower == "her" and word.tag == "PRP$") or lower == "their":
        return possessive(referent.short)
    return referent.short


def possessive(name: str) -> str:
    """ "Maya Chen's", "Audrey's dogs'"."""
    return f"{name}'" if name.endswith("s") and " " in name else f"{name}'s"


def points_nowhere(parsed: Parsed, word: Word) -> bool:
    """A pointing word as subject or object ("them", "that", "something", "that fan"), or
    "there"/"here" as a place."""
    lower = word.lower
    if lower in ("there", "here"):
        return word.dep == "advmod"
    if lower in POINTING and word.dep in CORE and word.tag not in ("WDT", "WP"):
        return True
    if lower in POINTING and word.dep in ("poss", "det") and lower not in ("one",):
        owner = parsed.words[word.head]
        return owner.dep in CORE and owner.lemma not in TIME_NOUNS
    return False


def named(parsed: Parsed, word: Word, speech: Speech) -> Referent | None:
    """Whom a noun phrase headed by ``word`` means: a member by name, a relation ("my
    sister Lena", "Tom's wife"), or another named person."""
    if word.pos == "PROPN" or (word.dep in (*CORE, "poss") and speech.cast.find(word.text)):
        person = speech.cast.find(name_of(parsed, word.i)) or speech.cast.find(word.text)
        if person is not None:
            kind: Kind = "self" if person.actor_id == speech.speaker.actor_id else "member"
            return Referent(kind, person.name, person)
    known = _named_before(parsed, word, speech)
    if known is not None:
        return known
    if (word.lemma in ROLES and word.pos == "NOUN") or word.lower in FAMILY:
        return _relation(parsed, word, speech)
    titled = [k for k in parsed.kids(word.i) if k.lemma in ROLES and k.i == word.i - 1]
    # "my manager greg", "my cousin rosa" ("my" hung on the name or on the role), "my best
    # friend oskar" (a name the tagger took for a common noun that no table knows)
    owned = titled and (parsed.kids(titled[0].i, "poss") or mine(parsed, word))
    unknown = word.tag == "NN" and word.text.isalpha() and not known_noun(word.lower)
    if (word.pos == "PROPN" or unknown) and owned:
        return _relation(parsed, titled[0], speech, word)
    if kin_name(parsed, word):
        return _relation(parsed, parsed.words[word.i - 1], speech, word)  # "my sister lena"
    if word.pos == "PROPN" and word.dep != "compound" and _bare_name(parsed, word):
        given = word.lower
        if given in DAYS_NAMED:  # "vday is friday and my gf says she…": no "she"
            return None
        if given in speech.heard.roles:
            role_of = speech.heard.roles[given]
            return Referent("relation", word.text, speech.speaker, role_of, given)
        if not _maybe_a_person(parsed, word):
            return None  # a place, an organisation, a word capitalised to open a sentence
        return Referent("outsider", name_of(parsed, word.i), None, None, given)
    return None


def _named_before(parsed: Parsed, word: Word, speech: Speech) -> Referent | None:
    """The speaker's relation an earlier session named by this given name ("my wife rosa"
    then, "rosa switched to the ER" now), said bare (no article or owner), however typed."""
    earlier = speech.heard.earlier.get(word.lower)
    if earlier is None or earlier[0] != speech.speaker.actor_id or word.dep == "compound":
        return None
    if word.pos not in ("PROPN", "NOUN") or parsed.kids(word.i, "det", "poss"):
        return None
    return Referent("relation", as_name(word.text), speech.speaker, earlier[1], word.lower)


def mine(parsed: Parsed, word: Word) -> bool:
    """Whether the speaker owns the noun ("my place", "our flat")."""
    return any(k.lower in ("my", "our") for k in parsed.kids(word.i, "poss"))


def _maybe_a_person(parsed: Parsed, word: Word) -> bool:
    """Whether a proper noun may name a person, by its entity type where it was read: a
    person's name, or an organisation's (the small model takes rare given names for
    one: "Cassius is giving a talk"), or no type at all where the capital says something
    (not at the start of a sentence: "Gym moved my assessment", "Cool. tried…", nor in
    capitals throughout: "NEW GIG at…"); never a
    place or any other type ("Sheffield has better crags")."""
    entity = parsed.entity(word.i)
    if entity is None or entity in ("PERSON", "ORG"):
        return True
    first = any(word.i == sentence.start for sentence in parsed.sentences)
    shouted = word.text.isupper() and len(word.text) > 1  # "NEW GIG at…": no capital of a name
    return entity == "" and not first and not shouted


_RECENT_TURNS = 4
_CHILDREN = frozenset(("child", "son", "daughter"))
_SUBJECT_OR_OBJECT = words("nsubj nsubjpass dobj")
_THE_KIN = FAMILY | words("kids kid children husband wife baby twins gf bf")
_KIN = FAMILY | words(
    """sister brother wife husband mother father son daughter cousin aunt uncle niece nephew
    grandmother grandfather partner boyfriend girlfriend fiance fiancee"""
)
_KIN_COMPOUNDS = words(
    """tongue city company figure ship board land language country nature hood site
    organization organisation school"""
)
_BYGONE = frozenset(("childhood", "old", "late", "former", "ex", "previous", "first"))


_ABSTRACT_SUFFIXES = ("tion", "sion", "ment", "ness", "ity", "ance", "ence", "ship", "ism")


def kin_name(parsed: Parsed, word: Word) -> bool:
    """ "my sister lena" parsed with "lena" as a common noun that "sister" qualifies and "my"
    owns: a relative named, not a thing of the speaker's called "sister lena" (but "my
    mother tongue", "my sister city", "my roommate situation")."""
    before = parsed.words[word.i - 1] if word.i > 0 else None
    if before is None or before.head != word.i or before.dep != "compound":
        return False
    if before.lower not in _KIN or word.tag != "NN" or word.lemma in ROLES | _KIN_COMPOUNDS:
        return False
    if word.lower.endswith(_ABSTRACT_SUFFIXES) and known_noun(word.lower):
        return False  # "my roommate situation": no given name ends like an abstract noun
    return word.text.isalpha() and bool(parsed.kids(word.i, "poss"))


def given_name(parsed: Parsed, word: Word) -> bool:
    """The name a relation is said to have, however it was typed: "my manager is Priya",
    "… will be priya", "… is gonna be priya" (the tagger reads a lowercase name there as a
    common noun: one the lemmatizer's tables do not know, without an article)."""
    be = parsed.words[word.head]
    if word.dep not in ("attr", "acomp") or be.lemma != "be" or parsed.kids(word.i, "det"):
        return False
    titled = word.i > 0 and parsed.words[word.i - 1].lower in TITLES  # "dr okonjo"
    # read as a noun, or as an adjective the tables do not know ("is teodor, he's nice")
    unknown = word.tag == "JJ" and word.text.isalpha() and not known_adjective(word.lower)
    typed = word.tag == "NN" or (word.tag == "JJ" and (titled or unknown))
    if word.pos != "PROPN" and (not typed or known_noun(word.lower)):
        return False
    going = parsed.words[be.head] if be.dep == "xcomp" else be  # "is going to be"
    if going is not be and (going.lemma != "go" or going.tag != "VBG"):
        return False
    subjects = parsed.kids(going.i, "nsubj")
    owned = bool(subjects) and bool(parsed.kids(subjects[0].i, "poss"))
    return owned and subjects[0].lemma in ROLES


def _named_as(parsed: Parsed, word: Word) -> list[Word]:
    """The one said to be the relation: "Hale is my coach", "sara is my sister" (a name,
    however it was typed: the tagger reads a lowercase one as a common noun)."""
    be = parsed.words[word.head]
    if word.dep != "attr" or be.lemma != "be" or parsed.kids(word.i, "det"):
        return []
    subjects = parsed.kids(be.i, "nsubj")
    if len(subjects) != 1 or parsed.kids(subjects[0].i, "det", "poss", "conj"):
        return []
    who = subjects[0]
    typed = who.tag == "NN" and who.text.isalpha() and not known_noun(who.lower)
    return [who] if (who.pos == "PROPN" or typed) and _bare_name(parsed, who) else []


def _bare_name(parsed: Parsed, word: Word) -> bool:
    """A name as people are named: no article ("the Eisenhower Matrix"), not a quoted title
    ("Brave" by Sara Bareilles)."""
    if parsed.kids(word.i, "det"):
        return False
    before = parsed.words[word.left - 1].text if word.left > 0 else ""
    return before not in ('"', "'", "“", "‘")


def the_kin(parsed: Parsed, word: Word, speech: Speech) -> bool:
    """Family the speaker calls "the" ("the hubby", "the kids", "the 2 younger kids"), as
    subject or object: the speaker's own; children only once the speaker has named their
    own ("my son", "my kids") in the session, so "a talent show for the kids" at a youth
    centre is nobody's; not when a phrase says whose ("the kids at school", "the kids
    who…")."""
    if word.lower not in _THE_KIN or word.pos not in ("NOUN", "PROPN"):
        return False
    if word.dep not in _SUBJECT_OR_OBJECT:
        return False
    named_own = {r for who, r in speech.heard.kin if who == speech.speaker.actor_id}
    if role(word) == "child" and not named_own & _CHILDREN:
        return False
    kids = parsed.kids(word.i)
    dets = [k for k in kids if k.dep in ("det", "poss")]
    told = any(k.dep in ("prep", "relcl", "acl") for k in kids)
    return len(dets) == 1 and dets[0].lower == "the" and not told


def _relation(
    parsed: Parsed, word: Word, speech: Speech, given: Word | None = None
) -> Referent | None:
    owners = parsed.kids(word.i, "poss") or (parsed.kids(given.i, "poss") if given else [])
    if not owners:
        bare = word.lower in FAMILY and not parsed.kids(word.i, "det")
        bare = bare or the_kin(parsed, word, speech)
        return Referent("relation", f"{speech.me.possessive} {word.lower}", speech.speaker,
                        role(word), None, word.lower) if bare else None  # fmt: skip
    owner = pronoun(owners[0], speech) if is_pronoun(owners[0]) else None
    if owner is None and owners[0].pos == "PROPN":
        owner = named(parsed, owners[0], speech)
    if owner is None or owner.person is None or owners[0].lower in THIRD | THEY:
        return None  # "her husband": not a person of its own for a later "she"
    if given is None:
        names = [
            k
            for k in parsed.kids(word.i, "appos", "npadvmod")
            if k.pos == "PROPN" and not parsed.kids(k.i, "conj")  # "my gf, Toby and I": a list
        ]
        after = parsed.words[word.head]
        if after.i == word.i + 1 and after.pos == "PROPN":
            names.append(after)  # "my manager greg", parsed with the name as head
        bygone = any(k.lemma in _BYGONE for k in parsed.kids(word.i, "amod", "compound"))
        if (
            word.dep == "appos"
            and after.pos == "PROPN"
            and _bare_name(parsed, after)
            and not bygone
        ):
            names.append(after)  # "meet Toby, my puppy"; not "Max, my childhood dog"
        names += _named_as(parsed, word)
        given = names[0] if names else None
    title = f"{owner.possessive} {word.text}" + (f" {as_name(given.text)}" if given else "")
    lower = given.lower if given else None
    return Referent("relation", title, owner.person, role(word), lower, word.lower)
