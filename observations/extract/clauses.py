"""The clauses of a parsed sentence: one fact per clause.

A clause is headed by the sentence's root, or by a verb that hangs on a clause head as a
conjunct ("I'm vegetarian, and I can't travel on Sundays"), an adverbial clause ("…
because I got a job"), a clausal complement ("I think I'm moving") or a parataxis ("I
prefer aisle seats, my knee needs the space"). Every other word belongs to the clause of
its nearest ancestor that heads one, so relative clauses and infinitives stay inside
their clause. A conjunct without a subject of its own shares its clause's ("I love
hiking and play guitar"), and so does a participle clause set after its main clause by a
comma ("I'll drive, borrowing my dad's van"). Words that only link or frame clauses are
left out of each: coordinating conjunctions between clauses, subordinating ones
("because", "when"), interjections, discourse fillers at the start ("actually", "so", "by
the way"), "please", trailing "too"/"lol", and punctuation at the edges.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from observations.extract.analysis import Parsed, Word
from observations.extract.vocabulary import COGNITION, ROLES, words

SUBJECTS = ("nsubj", "nsubjpass", "csubj")
GO = words("go goes went gone going")  # "went" as an auxiliary has the lemma "went"
_SPLIT = ("conj", "advcl", "ccomp", "parataxis", "dep")
_VERBAL = ("VERB", "AUX")
_FILLERS = words(
    """actually anyway anyways so well also basically honestly seriously literally like
    plus btw fyi oh ok okay yeah yes yep yup no nah nope hey hi hmm um uh wow lol haha
    anyhow besides tho though"""
)
_TRAILING = words("too either lol haha lmao tbh though tho actually btw fyi obv anyway honestly")
_WH = ("WP", "WRB", "WDT", "WP$")
# verbs whose clausal complement is a statement of its own ("I think I'm moving")
_REPORTING = COGNITION | words(
    "say tell mention admit explain announce promise hear learn remind warn"
)
_FRAMING = words("when whenever before after until till while once if unless where")
# framing words after which a past clause tells what happened ("after we went camping")
_PAST_FRAMES = words("when before after until till once while")
# participles that work as prepositions or comments ("depending on", "judging by")
_PREPOSITIONAL = words(
    """depend consider include exclude assume judge speak regard concern accord follow
    give let count"""
)
_ASIDES = (("by", "the", "way"), ("to", "be", "honest"), ("for", "real"), ("in", "fact"))


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of a sentence: its head, its own words, its subject and how it hangs."""

    head: int
    words: tuple[int, ...]  # its words in order, linking words and fillers left out
    subject: int | None  # its subject word, or the one it shares with its conjunct
    shared_subject: bool  # the subject is the clause's it is conjoined to
    link: str  # ROOT, conj, advcl, ccomp or parataxis
    mark: str | None  # its subordinating conjunction ("because", "if", "when"), lower case
    question: bool
    parent: int | None  # the head of the clause it hangs on


def split_clauses(parsed: Parsed, sentence: range, root: int | None = None) -> list[Clause]:
    """The clauses of one sentence of ``parsed`` (or of the phrase headed by ``root``), in
    the order of their heads."""
    if not sentence:
        return []
    root = _root(parsed, sentence) if root is None else root
    heads = _heads(parsed, sentence, root)
    owner = {i: _owning_head(parsed, i, heads) for i in sentence}
    clauses: dict[int, Clause] = {}
    for head in sorted(heads, key=lambda h: _depth(parsed, h)):
        own = [i for i in sentence if owner[i] == head]
        subject, shared = _subject(parsed, head, clauses)
        kept = _trim(parsed, _without_links(parsed, own, head, heads), head)
        link = "ROOT" if head == root else parsed.words[head].dep
        mark, kept = _mark(parsed, head, kept, link)
        asked = any(parsed.words[i].text == "?" for i in own)  # its own question mark
        question = asked or _inverted(parsed, kept, subject, link)
        parent = None if head == root else _owning_head(parsed, parsed.words[head].head, heads)
        clauses[head] = Clause(head, tuple(kept), subject, shared, link, mark, question, parent)
    return [clauses[h] for h in sorted(clauses)]


def framed_clauses(parsed: Parsed, clause: Clause) -> list[Clause]:
    """The past clauses framing ``clause`` in time, each as a clause of its own without its
    framing word: "I had a quiet weekend after we went camping" → "we went camping"; "she
    gave it to me when I was young" → "I was young". Not a condition or a habit ("if I
    went", "whenever I fly", "before I turn forty": not past), nor one inside another
    framed clause (it stays in its own)."""
    found = []
    for i in clause.words:
        word = parsed.words[i]
        if word.dep != "advcl" or word.head not in clause.words or not _framing(parsed, word):
            continue
        marks = [k for k in parsed.kids(i, "mark", "advmod") if k.i < i and k.lower in _FRAMING]
        if any(m.lower not in _PAST_FRAMES for m in marks) or not _past(parsed, word):
            continue
        span = range(word.left, word.right + 1)
        for own in split_clauses(parsed, span, root=i):
            if own.head == i:
                kept = tuple(j for j in own.words if j not in {m.i for m in marks})
                own = replace(own, words=kept, link="advcl", mark=None, parent=clause.head)
            found.append(own)
    return found


def relative_clauses(parsed: Parsed, clause: Clause) -> list[Clause]:
    """The relative clauses on a person in ``clause`` whose relative pronoun is their
    subject, each as a clause of its own with that person as its subject: "congrats to
    priscilla who just got the scholarship" → "priscilla just got the scholarship"; "my
    sister, who lives in Paris, is visiting" → "my sister lives in Paris". A person: a name,
    or a relation ("my sister"); not "the guy who fixed my car"."""
    found = []
    for i in clause.words:
        word = parsed.words[i]
        if word.dep != "relcl" or word.pos not in _VERBAL:
            continue
        pronouns = [k.i for k in parsed.kids(i, "nsubj", "nsubjpass") if k.lower in ("who", "that")]
        if not pronouns:
            continue
        # the person described: the clause's head noun, or the name just before "who" when
        # the parser hung the clause on the sentence ("congrats to priscilla who got …"),
        # or whoever is "the one who": "im the one who gets carsick" is "I get carsick"
        person = next((p for p in (word.head, pronouns[0] - 1) if _a_person(parsed, p)), None)
        person = _the_one(parsed, word.head) if person is None else person
        if person is None:
            continue
        for own in split_clauses(parsed, range(word.left, word.right + 1), root=i):
            if own.head == i:
                kept = tuple(j for j in own.words if j != pronouns[0])
                own = replace(own, words=kept, subject=person, shared_subject=True,
                              link="relcl", question=False, parent=clause.head)  # fmt: skip
            found.append(own)
    return found


def _the_one(parsed: Parsed, i: int) -> int | None:
    """The subject of "<subject> is the one …" when ``i`` is that "one"."""
    one = parsed.words[i]
    be = parsed.words[one.head]
    if one.lower != "one" or one.dep != "attr" or be.lemma != "be":
        return None
    subjects = parsed.kids(be.i, "nsubj")
    return subjects[0].i if subjects and subjects[0].pos in ("PRON", "PROPN") else None


def _a_person(parsed: Parsed, i: int) -> bool:
    if i < 0:
        return False
    word = parsed.words[i]
    owned = bool(parsed.kids(i, "poss")) and word.lemma in ROLES
    return (word.pos == "PROPN" and not parsed.kids(i, "det")) or owned


def _past(parsed: Parsed, verb: Word) -> bool:
    """A clause told in the past: "went", "was", "had left", "was making"."""
    finite = [verb, *parsed.kids(verb.i, "aux", "auxpass")]
    return any(v.tag == "VBD" for v in finite) and not any(v.tag == "MD" for v in finite)


def _root(parsed: Parsed, sentence: range) -> int:
    return next((i for i in sentence if parsed.words[i].head == i), sentence[0])


def _depth(parsed: Parsed, i: int) -> int:
    depth = 0
    while parsed.words[i].head != i:
        i, depth = parsed.words[i].head, depth + 1
    return depth


def _heads(parsed: Parsed, sentence: range, root: int) -> set[int]:
    """The clause heads: the root, then down the tree (a conjunct splits only from a head)."""
    heads = {root}
    for i in sorted(sentence, key=lambda i: _depth(parsed, i)):
        word = parsed.words[i]
        split = word.dep in _SPLIT and _clause_like(parsed, word, heads)
        if i != root and (split or _misread_clause(parsed, word)):
            heads.add(i)
    return heads


FINITE_TAGS = ("VBD", "VBP", "VBZ")  # a verb in a tense


def _misread_clause(parsed: Parsed, word: Word) -> bool:
    """A tensed verb with a subject of its own that the parse hung on another verb as its
    object ("teodor left so i report to wren now", "report" the object of "left"): a
    clause all the same."""
    if word.dep not in ("dobj", "attr", "npadvmod") or word.pos != "VERB":
        return False
    return word.tag in FINITE_TAGS and bool(parsed.kids(word.i, "nsubj"))


def _clause_like(parsed: Parsed, word: Word, heads: set[int]) -> bool:
    if word.dep == "conj" and word.head not in heads:
        return False
    if word.dep == "advcl" and _framing(parsed, word):
        return False
    if word.dep == "ccomp" and not _reported(parsed, word):
        return False  # "contribute towards making the world a better place": one clause
    return word.pos in _VERBAL or bool(parsed.kids(word.i, *SUBJECTS))


def _framing(parsed: Parsed, word: Word) -> bool:
    """An adverbial clause that says when or on what condition the main one holds ("when
    I fly", "before I turn forty", "if it rains"): it stays part of the main clause."""
    marks = [k.lower for k in parsed.kids(word.i, "mark", "advmod") if k.i < word.i]
    return any(m in _FRAMING for m in marks)


def _reported(parsed: Parsed, word: Word) -> bool:
    """A clausal complement that is a statement of its own: after a reporting verb ("I
    think I'm moving"), or a whole clause before its head ("I'm allergic to peanuts, so
    please keep that in mind")."""
    if parsed.words[word.head].lemma in _REPORTING:
        return True
    return word.i < word.head and bool(parsed.kids(word.i, *SUBJECTS))


def _owning_head(parsed: Parsed, i: int, heads: set[int]) -> int:
    while i not in heads and parsed.words[i].head != i:
        i = parsed.words[i].head
    return i


def _subject(parsed: Parsed, head: int, done: dict[int, Clause]) -> tuple[int | None, bool]:
    own = parsed.kids(head, *SUBJECTS)
    for aux in parsed.kids(head, "aux"):  # "my girlfriend and I went fishing", "went" an aux
        own = own or (parsed.kids(aux.i, *SUBJECTS) if aux.lower in GO else [])
    if own:
        return own[0].i, False
    word = parsed.words[head]
    if (word.dep == "conj" or _trailing_participle(parsed, word)) and word.head in done:
        return done[word.head].subject, done[word.head].subject is not None
    return None, False


def _trailing_participle(parsed: Parsed, word: Word) -> bool:
    """A participle clause without a subject set after its main clause by a comma ("I'll
    drive, borrowing my dad's van"): it shares the main clause's subject. Not a participle
    that works as a preposition ("…, depending on the weather"), a perfect or passive one
    ("having worked"). (One after a person the main clause acts on may tell of that person:
    see :func:`observations.extract.atoms.clause_atom`.)"""
    if word.dep != "advcl" or word.tag != "VBG" or word.i < word.head:
        return False
    if word.lemma in _PREPOSITIONAL or parsed.kids(word.i, "aux", "auxpass", "mark", *SUBJECTS):
        return False
    main = parsed.words[word.head]
    if not any(parsed.words[i].text == "," for i in range(main.i + 1, word.left)):
        return False
    return not _of_the_speaker_alone(parsed, main, word)


def _of_the_speaker_alone(parsed: Parsed, main: Word, word: Word) -> bool:
    """A participle that says "my" or "me" after a main clause about someone or something
    else ("moab was unreal, still finding sand in my boots"): the speaker left out their
    own "I", and the participle does not share the main clause's subject."""
    subjects = parsed.kids(main.i, *SUBJECTS)
    if not subjects or subjects[0].lower in ("i", "we"):
        return False
    return any(parsed.words[i].lower in ("my", "me", "myself") for i in parsed.subtree(word.i))


def participle(parsed: Parsed, clause: Clause) -> bool:
    """Whether ``clause`` is a trailing participle clause sharing its main clause's subject."""
    head = parsed.words[clause.head]
    return clause.shared_subject and clause.link == "advcl" and head.tag == "VBG"


def _before_any(parsed: Parsed, i: int, starts: list[int]) -> bool:
    """Word ``i`` comes right before one of ``starts`` (punctuation between aside)."""
    for start in starts:
        between = range(i + 1, start)
        if start > i and all(parsed.words[j].pos == "PUNCT" for j in between):
            return True
    return False


def _mark(parsed: Parsed, head: int, kept: list[int], link: str) -> tuple[str | None, list[int]]:
    """The clause's subordinating word ("because", or "when" as its first word), and its
    words without it."""
    marks = parsed.kids(head, "mark")
    if marks:
        return " ".join(m.lower for m in marks), kept
    if link != "ROOT" and kept and parsed.words[kept[0]].tag == "WRB":
        return parsed.words[kept[0]].lower, kept[1:]
    return None, kept


def _without_links(parsed: Parsed, own: list[int], head: int, heads: set[int]) -> list[int]:
    """``own`` without the words that link clauses: conjunctions, marks, interjections."""
    starts = [parsed.words[k.i].left for k in parsed.kids(head, "conj") if k.i in heads]
    marks = {k.i for k in parsed.kids(head, "mark")}
    # an adverb right before the mark belongs to it: "ever since", "even though", "right after"
    leading = {i - 1 for i in marks if i > 0 and parsed.words[i - 1].dep == "advmod"}
    drop = marks | {i for i in leading if parsed.words[i].head == head} | _asides(parsed, own)
    for i in own:
        word = parsed.words[i]
        linking = word.dep == "cc" and word.head == head and _before_any(parsed, i, starts)
        if word.dep in ("intj", "preconj") or word.lower == "please" or linking:
            drop.add(i)
    return [i for i in own if i not in drop]


def _asides(parsed: Parsed, own: list[int]) -> set[int]:
    """Set phrases that only comment on the clause: "by the way", "to be honest"."""
    text = [parsed.words[i].lower for i in own]
    found: set[int] = set()
    for phrase in _ASIDES:
        n = len(phrase)
        for at in range(len(own) - n + 1):
            if tuple(text[at : at + n]) == phrase:
                found.update(own[at : at + n])
    return found


def _trim(parsed: Parsed, own: list[int], head: int) -> list[int]:
    """Drop fillers and punctuation at the start; after the head, cut at a tail that only
    comments ("… so nothing with dairy", "…! wiener str.", "…, my stomach"); then drop
    trailing fillers and punctuation."""
    own = own[: _tail(parsed, own, head)]
    start, end = 0, len(own)
    while start < end and _leading_filler(parsed.words[own[start]], head):
        start += 1
    while end > start and _trailing_filler(parsed.words[own[end - 1]]):
        end -= 1
    return own[start:end]


def _tail(parsed: Parsed, own: list[int], head: int) -> int:
    """Where the clause's words stop: at an inner "!" or "?", a verbless "so …" (or words
    after one that another clause took: "allergic to cats remember so no pets"), or a
    noun phrase hung on the head after a comma ("I can't do spicy food, my stomach")."""
    for n, i in enumerate(own):
        word = parsed.words[i]
        if i <= head or n == 0:
            continue
        if word.text in ("!", "?") and n < len(own) - 1:
            return n
        if _so(word) or any(_so(parsed.words[j]) for j in range(own[n - 1] + 1, i)):
            return n  # a "so" of its own, or of a clause between ("…cats remember so no pets")
        after = parsed.words[own[n + 1]] if n + 1 < len(own) else None
        if word.text == "," and after is not None and _aside(parsed, after, own[-1]):
            return n
    return len(own)


def _so(word: Word) -> bool:
    return word.lower == "so" and word.dep in ("advmod", "prep", "cc", "mark", "dep")


def _aside(parsed: Parsed, word: Word, last: int) -> bool:
    """The rest of the clause, from ``word`` on, is one noun phrase hung loosely on what
    comes before ("…, my stomach", "…, chicken ones for me")."""
    top = word
    while top.head != top.i and parsed.words[top.head].left >= word.i:
        top = parsed.words[top.head]
    loose = top.dep in ("npadvmod", "appos", "dep") and top.pos == "NOUN"
    return loose and top.right >= last


def _leading_filler(word: Word, head: int) -> bool:
    if word.pos == "PUNCT" or word.dep in ("cc", "intj"):
        return True
    return word.lower in _FILLERS and word.i != head and word.dep not in SUBJECTS


def _trailing_filler(word: Word) -> bool:
    if word.pos == "PUNCT":
        return True
    return word.lower in _TRAILING and word.dep in ("advmod", "dep", "npadvmod", "intj")


def _inverted(parsed: Parsed, kept: list[int], subject: int | None, link: str) -> bool:
    """Question word order without a question mark: "do you like jazz", "what is it"."""
    if not kept:
        return False
    first = parsed.words[kept[0]]
    if first.tag in _WH and link == "ROOT":
        return True
    if subject is None or parsed.words[subject].head not in kept:
        return False
    head = parsed.words[subject].head  # "(eli) did you pack the boots"
    return any(a.i < subject for a in parsed.kids(head, "aux", "auxpass") if a.i in kept)
