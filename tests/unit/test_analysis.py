"""The linguistic analysis: the pinned pipeline, checked before use, and its typed view."""

from __future__ import annotations

from pathlib import Path

import pytest
import spacy

from observations.extract import analysis
from observations.extract.analysis import AnalysisModelInvalid, analyse, check_model


def test_the_installed_pipeline_has_its_pinned_digest() -> None:
    assert check_model() == analysis.model_directory()


def test_a_pipeline_whose_files_changed_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analysis, "MODEL_SHA256", "0" * 64)
    with pytest.raises(AnalysisModelInvalid, match="sha256"):
        check_model()


def test_the_digest_covers_every_file_and_its_path(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x")
    before = analysis.directory_sha256(tmp_path)
    (tmp_path / "a").rename(tmp_path / "b")
    assert analysis.directory_sha256(tmp_path) != before


def test_a_batch_is_parsed_in_order_with_sentences_heads_and_lemmas() -> None:
    first, second = analyse(["I ran the half marathon. My knees hurt.", "Tom flies."])
    assert [len(s) for s in first.sentences] == [6, 4]
    ran = first.words[1]
    assert (ran.lemma, ran.pos, ran.dep) == ("run", "VERB", "ROOT")
    assert first.words[ran.head] == ran and first.subtree(1) == range(0, 6)
    assert second.words[1].tag == "VBZ"


def test_the_layers_multiply_with_numpys_blas_not_blis() -> None:
    models = [getattr(pipe, "model", None) for _, pipe in analysis.load_pipeline().pipeline]
    models = [model for model in models if model is not None]
    assert models and all(model.ops.use_blis is False for model in models)


def test_the_light_analysis_has_parts_of_speech_from_tags() -> None:
    (light,) = analyse(["She saw them."], light=True)
    assert [w.pos for w in light.words] == ["PRON", "VERB", "PRON", "PUNCT"]


CHAT = [
    "I'm gonna go, let's see if y'all ain't ready yet.",
    "There's a cat that I've been feeding, but I didn't name it.",
    "Nothin' much, c'mon!  Got ta go\n\nok bye",
    "She said that if you have time, we could do it; it is what it is.",
    "My sister Lena lives in Porto and I visit her most weekends.",
    "Those are the ones I'd buy, but not these.",
]


def test_the_attribute_rules_and_lemmas_are_those_of_the_pipeline_as_shipped() -> None:
    nlp = analysis.load_pipeline()
    loaded = analysis._loaded()
    shipped = spacy.load(analysis.check_model(), exclude=list(analysis.EXCLUDED))
    reference = list(shipped.pipe(CHAT))  # spaCy's attribute ruler, lemmatizer and tables
    ours = [
        loaded.lemmatizer(loaded.attributes(doc))
        for doc in nlp.pipe(CHAT, disable=list(analysis.LIGHT))
    ]
    for expected, got in zip(reference, ours, strict=True):
        assert [_annotations(t) for t in got] == [_annotations(t) for t in expected]


def _annotations(token: object) -> tuple[str, ...]:
    return tuple(
        str(getattr(token, name)) for name in ("text", "pos_", "morph", "lemma_", "tag_", "dep_")
    )


@pytest.mark.parametrize(
    ("said", "place"),
    [
        ("we went to seattle", "Seattle"),  # parsed as "to" + an infinitive
        ("I'm flying to porto the day after tomorrow", "Porto"),  # parsed as a pobj verb
        ("my insurance changed to aetna", "Aetna"),  # parsed as "to" + a noun as a verb
    ],
)
def test_a_place_after_to_that_the_tagger_took_for_a_verb_is_a_place(said: str, place: str) -> None:
    (parsed,) = analyse([said])
    (word,) = [w for w in parsed.words if w.text == place]
    to = parsed.words[word.head]
    assert (word.pos, word.dep, to.lower, to.dep) == ("PROPN", "pobj", "to", "prep")
    assert all(parsed.words[k].head != word.i for k in range(len(parsed.words)) if k != word.i)


def test_an_infinitive_that_is_a_verb_stays_one() -> None:
    (parsed,) = analyse(["i want to travel"])
    assert [(w.text, w.dep, w.pos) for w in parsed.words][-1] == ("travel", "xcomp", "VERB")
