"""The LoCoMo reader and the build half of ``memledger eval locomo``, on a tiny
conversation in the benchmark's format (written here, not taken from the benchmark)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ledger.db import Conn
from observations.builder import BuildConfig
from observations.embed_hash import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.eval import locomo
from ops.eval.locomo_data import (
    InvalidDataset,
    load,
    normalize_dia_id,
    parse_date,
    session_events,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SAMPLE = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I adopted a puppy last week."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Wow! What's the puppy's name?"},
            {
                "speaker": "Ana",
                "dia_id": "D1:3",
                "text": "Her name is Luna. I love hiking with her in the mountains.",
                "blip_caption": "a photo of a puppy on a mountain trail",
            },
        ],
        "session_2_date_time": "9:00 am on 20 May, 2023",
        "session_3_date_time": "9:00 am on 1 June, 2023",  # a date key without a session
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I started a pottery class yesterday."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "That's great, Ben!"},
        ],
    },
    "qa": [
        {
            "question": "When did Ana adopt a puppy?",
            "answer": "May 2023",
            "evidence": ["D1:1"],
            "category": 2,
        },
        {
            "question": "What does Ben do?",
            "answer": "pottery",
            "evidence": ["D2:1; D9:9"],
            "category": 4,
        },
        {
            "question": "Unanswerable?",
            "adversarial_answer": "x",
            "evidence": ["D1:2"],
            "category": 5,
        },
        {"question": "No evidence left", "answer": "x", "evidence": ["D7:1"], "category": 1},
    ],
    "observation": {
        "session_1_observation": {
            "Ana": [["Ana adopted a puppy named Luna.", "D1:1"]],
            "Ben": [["Ben asked about the puppy.", "D1:2"]],
        },
        "session_2_observation": {"Ben": [["Ben started pottery.", ["D2:1"]]]},
    },
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    return path


def test_reader_keeps_scored_questions_with_existing_evidence(data: Path) -> None:
    (conv,) = load(data)
    assert [len(s) for s in conv.sessions] == [3, 2]
    assert [(q.category, q.evidence) for q in conv.questions] == [(2, ("D1:1",)), (4, ("D2:1",))]
    assert conv.sessions[0][2].caption == "a photo of a puppy on a mountain trail"
    assert conv.sessions[1][0].at == datetime(2023, 5, 20, 9, 0, tzinfo=UTC)
    assert len(conv.reference_facts) == 3


def test_sessions_as_events_each_in_a_channel_of_its_own_whole_or_in_runs(data: Path) -> None:
    whole = session_events(data)
    assert [[e["external_id"] for e in s] for s in whole] == [
        ["D1:1", "D1:2", "D1:3"],
        ["D2:1", "D2:2"],
    ]
    assert len({e["channel_id"] for s in whole for e in s}) == 2
    runs = session_events(data, turns=2)  # D1:3 is a shorter rest, left out
    assert [[e["external_id"] for e in s] for s in runs] == [["D1:1", "D1:2"], ["D2:1", "D2:2"]]
    assert runs[0][0]["occurred_at"] == parse_date("1:56 pm on 8 May, 2023")


def test_reader_helpers() -> None:
    assert parse_date("7:55 pm on 9 June, 2023") == datetime(2023, 6, 9, 19, 55, tzinfo=UTC)
    assert normalize_dia_id("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert normalize_dia_id("D30:05") == ["D30:5"]
    assert normalize_dia_id("D") == []


def test_reader_rejects_what_it_cannot_read(data: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "x"}]')
    with pytest.raises(InvalidDataset, match="cannot read"):
        load(bad)
    with pytest.raises(InvalidDataset, match="no such conversations"):
        load(data, {"conv-missing"})


def test_ingest_and_build_measures_provenance_and_coverage(conn: Conn, data: Path) -> None:
    (conv,) = load(data)
    config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
    figures = locomo.ingest_and_build(conn, conv, config, now=NOW)
    assert figures.sessions == 2
    assert figures.entries > 0 and figures.valid_provenance == figures.entries
    assert figures.reference_facts == 3
    # Ana's puppy and Ben's pottery are facts; Ben's question is in the provenance of Ana's
    # reply to it
    assert figures.covered_facts == 3
    again = locomo.ingest_and_build(conn, conv, config, now=NOW)  # duplicates, unchanged
    assert again == figures
