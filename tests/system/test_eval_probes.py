"""``memledger eval probes`` on a few of the project's cases, against a real ``memledger
serve`` with build workers (hash embedder): the events go in with their own times, every
session is built and maintained, every check gets a result and the figures add up."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from consolidation.jobs import JOBS
from ledger.db import connect
from ops.eval.probes import Report, report_text, run_probes
from ops.eval.probes_data import load
from ops.services import drop_database, recreate_database

PROBES = Path(__file__).parents[1] / "data" / "probes.json"
# one case of most categories; each of them builds in well under a second
CASES = {"ku-004", "tr-003", "ga-002", "dup-002", "sp-004", "pi-004"}
SUBSET = load(PROBES, CASES)


@pytest.fixture(scope="module")
def db_url(admin_url: str, template_db: str) -> Iterator[str]:
    name = "memledger_test_eval_probes"
    yield recreate_database(admin_url, name, template_db)
    drop_database(admin_url, name)


@pytest.fixture(scope="module")
def report(db_url: str, redis: Any) -> Iterator[Report]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MEMLEDGER_EMBEDDER", "hash")  # the server's, a process of its own
        now = datetime(2026, 11, 1, tzinfo=UTC)
        yield run_probes(SUBSET, db_url, f"unix://{redis.socket_file}", now=now)


def result(report: Report, case: str, index: int) -> Any:
    return next(r for r in report.results if (r.case, r.index) == (case, index))


def test_every_check_of_the_cases_gets_one_result_and_the_figures_add_up(report: Report) -> None:
    checks = [(c.id, k.index) for c in SUBSET.cases for k in c.checks]
    assert sorted((r.case, r.index) for r in report.results) == sorted(checks)
    assert report.cases == len(CASES)
    assert report.sessions == sum(len(c.sessions) for c in SUBSET.cases)
    for by in ("category", "kind"):
        rates = report.rates(by)
        assert sum(n for _, _, n in rates.values()) == len(checks)
        assert sum(p for p, _, _ in rates.values()) == report.passed
        assert sum(b for _, b, _ in rates.values()) == report.believed
    figures = report.as_json()
    assert figures["checks"] == len(checks) and figures["passed"] == report.passed
    assert figures["beliefs"] == report.believed
    assert set(figures["categories"]) == {c.category for c in SUBSET.cases}
    text = report_text(report)
    failing = [r for r in report.results if not r.passed or not r.believed]
    assert text.count("      returned: ") == len(failing)
    assert f"overall{len(checks):>23}{report.passed:>8}" in text
    assert f"{report.believed:>9}{report.believed / len(checks):>9.1%}" in text


def test_every_maintenance_job_ran_once_through_the_api(report: Report, db_url: str) -> None:
    assert list(report.maintenance) == list(JOBS)
    with connect(db_url) as conn:
        rows = conn.execute("SELECT job FROM consolidation_runs WHERE tenant_id = 'probes'")
        assert sorted(r["job"] for r in rows.fetchall()) == sorted(JOBS)


def test_events_are_stored_with_their_own_times_and_offsets(report: Report, db_url: str) -> None:
    sent = {e.id: e.at for c in SUBSET.cases for s in c.sessions for e in s.events}
    with connect(db_url) as conn:
        rows = conn.execute(
            "SELECT external_id, occurred_at, utc_offset_minutes FROM memory_session_events"
            " WHERE tenant_id = 'probes'"
        ).fetchall()
        statuses = conn.execute("SELECT DISTINCT status FROM memory_sessions").fetchall()
    stored = {r["external_id"]: r for r in rows}
    assert set(stored) == set(sent)
    for external_id, at in sent.items():
        offset = at.utcoffset()
        assert offset is not None
        assert stored[external_id]["occurred_at"] == at
        assert stored[external_id]["utc_offset_minutes"] == offset.total_seconds() // 60
    assert [r["status"] for r in statuses] == ["built"]


def test_a_check_todays_memory_answers_passes(report: Report) -> None:
    # the puppy's name is said once, plainly; the agent's parcel tracking worked the
    # second time by the path it found the first time
    assert result(report, "tr-003", 1).passed, result(report, "tr-003", 1)
    assert result(report, "sp-004", 0).passed, result(report, "sp-004", 0)


def test_an_employer_said_in_passing_and_a_subjects_correction_are_what_memory_believes(
    report: Report,
) -> None:
    # "first week at kaiser oakland done!!!" supersedes "im a nurse at st. jude's"; Dev's
    # "its dogs not cats mia" puts right what Mia said of Dev
    assert result(report, "ku-004", 0).passed, result(report, "ku-004", 0)
    assert result(report, "ga-002", 0).passed, result(report, "ga-002", 0)


def test_two_users_with_one_display_name_see_none_of_each_other(report: Report) -> None:
    isolation = [r for r in report.results if r.kind == "isolation"]
    assert [(r.case, r.passed) for r in isolation] == [("pi-004", True), ("pi-004", True)]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    memledger = str(Path(sys.executable).with_name("memledger"))
    return subprocess.run(
        [memledger, "eval", "probes", *args], capture_output=True, text=True, timeout=60
    )


def test_the_command_refuses_a_malformed_file_naming_the_case_and_field(tmp_path: Path) -> None:
    raw = json.loads(PROBES.read_text("utf-8"))
    case = next(c for c in raw["cases"] if c["id"] == "ga-002")
    del case["checks"][1]["expect_any"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    out = run_cli("--data", str(bad))
    assert out.returncode == 2
    assert "case ga-002: checks.1.expect_any: required for this kind" in out.stderr
    missing = run_cli("--data", str(PROBES), "--cases", "ku-004,zz-001")
    assert missing.returncode == 2
    assert "cases: no such cases: zz-001" in missing.stderr
