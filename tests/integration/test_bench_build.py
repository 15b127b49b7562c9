"""``memledger bench build`` on sessions of a LoCoMo-format file, cut into runs of turns."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from ledger.db import connect
from observations.builder import BuildConfig
from observations.embed_hash import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.bench.build import run_build, transcript_of
from ops.cli import cli
from ops.eval.locomo_data import session_events
from tests.integration.test_locomo_eval import SAMPLE


def test_the_build_benchmark_runs_copies_of_the_sessions_it_is_given(
    fresh_db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    runs = session_events(path, turns=2)  # two sessions of two turns
    embedder = HashEmbedder()
    config = BuildConfig(extractor=HeuristicExtractor(), embedder=embedder)
    with connect(fresh_db_url, autocommit=True) as conn:
        figures = run_build(
            conn,
            lambda: connect(fresh_db_url, autocommit=True),
            config,
            embedder,
            sessions=4,  # a second copy, in channels and with users of its own
            builders=2,
            now=datetime(2026, 1, 1, tzinfo=UTC),
            transcript=transcript_of(runs),
        )
        built = conn.execute("SELECT count(*) AS n FROM memory_sessions").fetchone()
    assert figures.sessions == 4 and figures.events_per_session == 2
    words = sum(len(e["content"].split()) for e in runs[0] + runs[1])
    assert figures.words_per_session == words / 2
    assert figures.items_per_session > 0 and figures.e2e_parallel_sessions_per_s > 0
    assert built is not None and built["n"] == 3 * 4  # three tenants, two copies of two


def test_the_build_benchmark_refuses_runs_longer_than_every_session(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    done = CliRunner().invoke(cli, ["bench", "build", "--locomo", str(path), "--turns", "4"])
    assert done.exit_code == 2 and "has 4 turns" in done.output
