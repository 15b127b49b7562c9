"""Consolidation on a real PostgreSQL: supersede (at build time and as a job), merge,
decay, caps, resync, sweep and retention, their runs, history and tenant isolation.

Entries come from the real builder (heuristic extractor, hash embedder) from user turns
written for the purpose; each test runs in a rolled-back transaction with ``now`` given.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from consolidation import (
    JOBS,
    ConsolidationConfig,
    EntryNotFound,
    EntryState,
    JobScope,
    RetentionPolicy,
    entry_record,
    lock_key,
    plan_decay,
    point_window,
    run_job,
    supersede_at_build,
    window_for,
)
from ledger import append, list_sessions
from ledger.db import Conn, connect
from materializers import get_profile, project
from observations.builder import BuildConfig, build_session, record_failure
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.cli.consolidation import history_lines
from retrieval.search import Filters, Scope, search
from tests.events import replay, sample_events, says

NOW = datetime(2025, 10, 7, tzinfo=UTC)
DAY1 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=10)
CONFIG = ConsolidationConfig()
RUNS = itertools.count()
Row = dict[str, Any]


# ------------------------------------------------------------------------------ helpers


def new_tenant() -> str:
    return f"cons-{uuid.uuid4().hex[:10]}"


def build(conn: Conn, tenant: str, events: Sequence[Row], *, at_build: bool = True) -> None:
    """Append, close and build every session (supersede at build time unless told not to)."""
    replay(conn, tenant, list(events), now=NOW)
    hook = supersede_at_build if at_build else None
    config = BuildConfig(HeuristicExtractor(), HashEmbedder(), after_store=hook)
    for s in list_sessions(conn, tenant):
        if s["status"] == "closed":
            build_session(conn, tenant, s["id"], config, now=NOW)


def entries(conn: Conn, tenant: str, **where: str) -> list[Row]:
    rows = conn.execute(
        "SELECT * FROM memory_entries WHERE tenant_id = %s ORDER BY id", [tenant]
    ).fetchall()
    return [r for r in rows if all(r[k] == v for k, v in where.items())]


def history(conn: Conn, tenant: str, entry_id: int) -> list[tuple[str, str]]:
    return [(r["action"], r["actor"]) for r in entry_record(conn, tenant, entry_id).changes]


def run(
    conn: Conn,
    job: str,
    tenant: str,
    *,
    now: datetime = NOW,
    full: bool = False,
    config: ConsolidationConfig = CONFIG,
) -> dict[str, Any]:
    """A run by hand; each gets a window of its own (a by-hand run at one frozen ``now``
    would find the window of the run before taken)."""
    window = point_window(now + timedelta(microseconds=next(RUNS)))
    outcome = run_job(
        conn, job, config, JobScope(now, tenant, full), window=window, clock=lambda: now
    )
    assert outcome.status == "done"
    return outcome.stats


def found(conn: Conn, tenant: str, query: str, *, history: bool = False) -> set[int]:
    results = search(
        conn,
        Scope(tenant, user_id="maya"),
        query,
        embedder=HashEmbedder(),
        now=NOW,
        limit=50,
        filters=Filters(history=history),
    )
    return {r.candidate.entry_id for r in results}


BTC_THEN_ETH = [
    says(1, "My favorite cryptocurrency is BTC.", DAY1),
    says(2, "My favorite cryptocurrency is ETH now.", DAY2),
]


def assert_eth_current_btc_history(conn: Conn, tenant: str, actor: str) -> None:
    [btc] = entries(conn, tenant, key="preference:cryptocurrency", status="superseded")
    [eth] = entries(conn, tenant, key="preference:cryptocurrency", status="active")
    assert "BTC" in btc["canonical_statement"] and "ETH" in eth["canonical_statement"]
    assert btc["superseded_by"] == eth["id"] and btc["valid_to"] == eth["valid_from"]
    assert btc["expired_at"] == NOW and eth["valid_to"] is None
    assert history(conn, tenant, btc["id"]) == [("ADD", "builder"), ("SUPERSEDE", actor)]
    assert history(conn, tenant, eth["id"]) == [("ADD", "builder")]
    link = entry_record(conn, tenant, btc["id"]).links
    assert [(k["src_id"], k["relation"], k["dst_id"]) for k in link] == [
        (eth["id"], "supersedes", btc["id"])
    ]
    project(conn, tenant, now=NOW)
    [row] = [r for r in get_profile(conn, tenant, "maya") if r.key == "preference:cryptocurrency"]
    assert (row.value, row.conflicts, row.source_entry_ids) == ("ETH", (), (eth["id"],))
    query = "favorite cryptocurrency"
    assert eth["id"] in found(conn, tenant, query) and btc["id"] not in found(conn, tenant, query)
    assert {btc["id"], eth["id"]} <= found(conn, tenant, query, history=True)


# ------------------------------------------------------------------------------ supersede


def test_a_newer_preference_supersedes_the_older_as_it_is_built(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, BTC_THEN_ETH)
    assert_eth_current_btc_history(conn, tenant, "builder")
    assert run(conn, "supersede", tenant)["superseded"] == 0  # nothing left to do


def test_the_supersede_job_ends_the_older_fact_when_the_builder_did_not(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, BTC_THEN_ETH, at_build=False)
    assert len(entries(conn, tenant, key="preference:cryptocurrency", status="active")) == 2
    stats = run(conn, "supersede", tenant)
    assert (stats["superseded"], stats["links"], stats["owners"]) == (1, 1, 1)
    assert_eth_current_btc_history(conn, tenant, "consolidation:supersede")
    before = entries(conn, tenant)
    again = run(conn, "supersede", tenant, full=True)
    assert (again["superseded"], again["owners"]) == (0, 1)
    assert entries(conn, tenant) == before


def test_an_older_fact_built_late_is_superseded_at_once(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, BTC_THEN_ETH[1:])
    build(conn, tenant, BTC_THEN_ETH[:1])
    assert_eth_current_btc_history(conn, tenant, "builder")


def test_the_history_command_prints_every_change_and_the_lineage(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, BTC_THEN_ETH)
    [btc] = entries(conn, tenant, status="superseded")
    text = "\n".join(history_lines(entry_record(conn, tenant, btc["id"])))
    assert f"entry {btc['id']} (preference, user maya" in text and "superseded" in text
    assert "ADD" in text and "SUPERSEDE" in text and "active → superseded" in text
    assert f"supersedes entry {btc['id']}" in text and "maya-1" in text
    with pytest.raises(EntryNotFound):
        entry_record(conn, tenant, 10**12)


# ------------------------------------------------------------------------------ merge


def test_duplicates_merge_into_one_survivor_with_the_union_of_provenance(conn: Conn) -> None:
    tenant = new_tenant()
    build(
        conn,
        tenant,
        [
            says(1, "I tried sushi for the first time.", DAY1),
            says(2, "I tried sushi for the first time.", DAY2),
        ],
    )
    dups = entries(conn, tenant, kind="experience")
    assert len(dups) == 2
    stats = run(conn, "merge", tenant)
    assert (stats["merged"], stats["links"]) == (1, 1)
    [survivor] = entries(conn, tenant, kind="experience", status="active")
    [merged] = entries(conn, tenant, kind="experience", status="merged")
    assert set(survivor["source_external_ids"]) == {"maya-1", "maya-2"}
    assert set(survivor["source_event_ids"]) == {i for d in dups for i in d["source_event_ids"]}
    assert survivor["confidence"] == max(d["confidence"] for d in dups)
    assert history(conn, tenant, merged["id"])[-1] == ("MERGE", "consolidation:merge")
    assert history(conn, tenant, survivor["id"])[-1] == ("MERGE", "consolidation:merge")
    links = entry_record(conn, tenant, merged["id"]).links
    assert [(k["src_id"], k["relation"], k["dst_id"]) for k in links] == [
        (merged["id"], "merged_into", survivor["id"])
    ]
    assert merged["id"] not in found(conn, tenant, "sushi")
    assert merged["id"] in found(conn, tenant, "sushi", history=True)
    before = entries(conn, tenant)
    assert run(conn, "merge", tenant, full=True)["merged"] == 0
    assert entries(conn, tenant) == before


# ------------------------------------------------------------------------------ decay and caps

OLD_TURNS = [
    says(1, "We should book a table for Friday.", DAY1),
    says(2, "The weather in Porto was lovely this morning.", DAY1 + timedelta(minutes=1)),
    says(3, "My favorite drink is green tea.", DAY1 + timedelta(minutes=2)),
]


def test_decayed_entries_are_archived_and_found_only_by_history_queries(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, OLD_TURNS)
    assert run(conn, "decay", tenant)["archived"] == 0  # built today: too young
    later = NOW + timedelta(days=200)
    stats = run(conn, "decay", tenant, now=later)
    archived = entries(conn, tenant, status="archived")
    assert stats["archived"] == len(archived) > 0
    assert {e["kind"] for e in archived} <= {"episodic", "session_summary", "event"}
    assert entries(conn, tenant, kind="preference", status="active")  # profile kinds stay
    assert all(history(conn, tenant, e["id"])[-1] == ("ARCHIVE", "consolidation:decay")
               for e in archived)  # fmt: skip
    ids = {e["id"] for e in archived}
    assert not ids & found(conn, tenant, "weather Porto morning table Friday")
    assert ids & found(conn, tenant, "weather Porto morning table Friday", history=True)
    assert run(conn, "decay", tenant, now=later)["archived"] == 0


def test_decay_takes_entries_idle_for_thousands_of_half_lives(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, OLD_TURNS)
    ages = CONFIG.policy.half_life_days * 3000  # 0.5^3000 is below double precision
    assert run(conn, "decay", tenant, now=NOW + timedelta(days=ages))["archived"] > 0


def test_an_accessed_entry_does_not_decay(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, OLD_TURNS[:2])
    conn.execute(
        "UPDATE memory_entries SET access_count = 2, last_accessed_at = %s WHERE tenant_id = %s",
        [NOW, tenant],
    )
    assert run(conn, "decay", tenant, now=NOW + timedelta(days=400))["archived"] == 0


def test_caps_archive_the_lowest_scoring_entries_beyond_the_limit(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, OLD_TURNS)
    maya = entries(conn, tenant, owner_id="maya", status="active")
    config = ConsolidationConfig(policy=RetentionPolicy(max_active_per_owner=1))
    stats = run(conn, "caps", tenant, full=True, config=config)
    assert stats["archived"] == len(maya) - 1
    [kept] = entries(conn, tenant, owner_id="maya", status="active")
    assert kept["kind"] == "preference"  # protected kinds go last
    assert run(conn, "caps", tenant, full=True, config=config)["archived"] == 0


# ------------------------------------------------------------------------------ incremental


def test_an_incremental_pass_visits_only_owners_changed_since_the_last(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, [*BTC_THEN_ETH[:1], says(1, "My favorite drink is tea.", DAY1, "tom")])
    first = run(conn, "supersede", tenant)
    assert first["owners"] == 2
    assert run(conn, "supersede", tenant)["owners"] == 0
    build(conn, tenant, BTC_THEN_ETH[1:], at_build=False)
    third = run(conn, "supersede", tenant)
    assert (third["owners"], third["superseded"]) == (1, 1)


# ------------------------------------------------------------------------------ resync, sweep


def test_resync_brings_read_models_up_to_date_after_the_jobs(conn: Conn) -> None:
    tenant = new_tenant()
    build(conn, tenant, BTC_THEN_ETH, at_build=False)
    project(conn, tenant, now=NOW)
    [row] = get_profile(conn, tenant, "maya")
    assert len(row.conflicts) == 1
    run(conn, "supersede", tenant)
    stats = run(conn, "resync", tenant)
    assert stats["changes"] == 1 and stats["profile_rows"] == 1
    [row] = get_profile(conn, tenant, "maya")
    assert (row.value, row.conflicts) == ("ETH", ())
    assert run(conn, "resync", tenant).get("changes", 0) == 0
    assert run(conn, "resync", tenant, full=True)["profile_rows"] == 0


def test_sweep_closes_idle_sessions_and_queues_their_builds(conn: Conn) -> None:
    tenant = new_tenant()
    append(conn, tenant, [says(1, "Hello there.", DAY1)], now=DAY1)  # live
    queued: list[tuple[str, int]] = []
    config = ConsolidationConfig(enqueue=queued.extend)
    stats = run(conn, "sweep", tenant, config=config)
    [session] = list_sessions(conn, tenant)
    assert session["status"] == "closed" and queued == [(tenant, session["id"])]
    assert stats == {"closed_idle": 1, "queued": 1, "waiting": 0, "idempotency_keys_expired": 0}
    assert run(conn, "sweep", tenant, config=config)["queued"] == 0  # queued a moment ago
    stale = run(conn, "sweep", tenant, now=NOW + timedelta(hours=1), config=config)
    assert stale["queued"] == 1  # still unbuilt an hour later: its message may be lost
    assert queued == [(tenant, session["id"])] * 2


def closed_backlog(conn: Conn, tenant: str, n: int) -> list[int]:
    """``n`` sessions of ``tenant``, closed and waiting in the outbox."""
    events = [says(i, f"Message {i}.", DAY1 + timedelta(days=i)) for i in range(n + 1)]
    append(conn, tenant, events, now=NOW, gap=timedelta(hours=1))  # each day a session
    closed = sorted(s["id"] for s in list_sessions(conn, tenant) if s["status"] == "closed")
    assert len(closed) == n
    return closed


def test_sweeping_twice_over_a_backlog_queues_each_session_once(conn: Conn) -> None:
    tenants = [new_tenant(), new_tenant()]
    backlog = {t: closed_backlog(conn, t, 5) for t in tenants}
    queued: list[tuple[str, int]] = []
    config = ConsolidationConfig(enqueue=queued.extend)
    for _ in range(2):
        for tenant in tenants:
            run(conn, "sweep", tenant, config=config)
    assert queued == [(t, sid) for t in tenants for sid in backlog[t]]
    assert run(conn, "sweep", tenants[0], config=config)["waiting"] == 0


def test_a_sweep_queues_at_most_its_bound_of_a_tenant(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("consolidation.ledger_jobs.REQUEUE_PER_TENANT", 2)
    tenant = new_tenant()
    backlog = closed_backlog(conn, tenant, 5)
    queued: list[tuple[str, int]] = []
    config = ConsolidationConfig(enqueue=queued.extend)
    first = run(conn, "sweep", tenant, config=config)
    assert (
        first["queued"] == 2
        and first["waiting"] == 3
        and queued == [(tenant, sid) for sid in backlog[:2]]
    )
    while run(conn, "sweep", tenant, config=config)["queued"]:
        pass
    assert queued == [(tenant, sid) for sid in backlog]  # the rest, oldest first, once each


def test_builds_the_queue_refused_stay_in_the_outbox(conn: Conn) -> None:
    tenant = new_tenant()
    backlog = closed_backlog(conn, tenant, 3)

    def queue_down(sessions: Sequence[tuple[str, int]]) -> None:
        raise ConnectionError("the queue is down")

    with pytest.raises(ConnectionError):
        run(conn, "sweep", tenant, config=ConsolidationConfig(enqueue=queue_down))
    queued: list[tuple[str, int]] = []
    stats = run(conn, "sweep", tenant, config=ConsolidationConfig(enqueue=queued.extend))
    assert stats["queued"] == 3 and queued == [(tenant, sid) for sid in backlog]


def test_a_session_handed_over_is_free_to_build_while_its_message_is_sent(
    fresh_db_url: str,
) -> None:
    """A worker may take a message before the hand-over returns: the claim is committed by
    then, so the session is not locked (a locked one is skipped as busy and retried later,
    and a run's sessions would be built out of order)."""
    config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
    tenant = new_tenant()
    outcomes = []
    with connect(fresh_db_url, autocommit=True) as conn, connect(fresh_db_url) as worker:

        def send(sessions: Sequence[tuple[str, int]]) -> None:
            for t, session_id in sessions:
                with worker.transaction():
                    outcomes.append(build_session(worker, t, session_id, config, now=NOW).status)

        with conn.transaction():
            closed_backlog(conn, tenant, 2)
        run(conn, "sweep", tenant, config=ConsolidationConfig(enqueue=send))
    assert outcomes == ["built", "built"]


def test_a_failed_build_is_handed_over_again_once_its_backoff_passed(conn: Conn) -> None:
    tenant = new_tenant()
    [session_id, *_] = closed_backlog(conn, tenant, 1)
    queued: list[tuple[str, int]] = []
    config = ConsolidationConfig(enqueue=queued.extend)
    run(conn, "sweep", tenant, config=config)
    record_failure(conn, tenant, session_id, "boom", now=NOW, backoff=timedelta(minutes=1))
    assert run(conn, "sweep", tenant, config=config)["queued"] == 0  # backing off
    later = NOW + timedelta(minutes=3)
    assert run(conn, "sweep", tenant, now=later, config=config)["queued"] == 1
    assert run(conn, "sweep", tenant, now=later, config=config)["queued"] == 0
    assert queued == [(tenant, session_id)] * 2


# ------------------------------------------------------------------------------ retention


def read_models(conn: Conn, tenant: str) -> list[Row]:
    return conn.execute(
        "SELECT 'profile' AS t, user_id AS owner, key, statement AS v FROM user_profile"
        " WHERE tenant_id = %(t)s UNION ALL"
        " SELECT 'skill', agent_id, skill_key, goal FROM skill_proposal WHERE tenant_id = %(t)s"
        " ORDER BY 1, 2, 3",
        {"t": tenant},
    ).fetchall()


def test_retention_deletes_old_ledgers_and_every_entry_and_read_model_survives(
    conn: Conn,
) -> None:
    tenant = new_tenant()
    build(conn, tenant, sample_events())
    project(conn, tenant, now=NOW)
    before_entries = entries(conn, tenant)
    before_models = read_models(conn, tenant)
    sessions = list_sessions(conn, tenant)
    assert before_models and sessions
    query = "flight to Lisbon"
    before_found = found(conn, tenant, query)
    # the conversation ended weeks before it was closed here: its age counts from then
    assert min(s["ended_at"] for s in sessions) < NOW - timedelta(days=14)
    assert {s["closed_at"] for s in sessions} == {NOW}
    assert run(conn, "retention", tenant, now=NOW + timedelta(days=13))["sessions"] == 0

    later = NOW + timedelta(days=15)
    stats = run(conn, "retention", tenant, now=later)
    assert stats["sessions"] == len(sessions) and stats["events"] == len(sample_events())
    assert list_sessions(conn, tenant) == []
    left = conn.execute(
        "SELECT (SELECT count(*) FROM memory_session_events WHERE tenant_id = %(t)s) AS events,"
        " (SELECT count(*) FROM memory_observations WHERE tenant_id = %(t)s) AS observations,"
        " (SELECT count(*) FROM memory_links WHERE tenant_id = %(t)s"
        "   AND src_type = 'observation') AS links",
        {"t": tenant},
    ).fetchone()
    assert left == {"events": 0, "observations": 0, "links": 0}
    after = entries(conn, tenant)
    assert [e["id"] for e in after] == [e["id"] for e in before_entries]
    assert all(e["source_session_id"] is None for e in after)
    strip = [{**e, "source_session_id": None} for e in before_entries]
    assert after == strip  # nothing else changed: provenance (event and external ids) kept
    assert read_models(conn, tenant) == before_models
    assert run(conn, "resync", tenant, full=True)["profile_rows"] == 0
    assert read_models(conn, tenant) == before_models
    assert found(conn, tenant, query) == before_found
    assert run(conn, "retention", tenant, now=later, full=True)["sessions"] == 0


# ------------------------------------------------------------------------------ runs, isolation


def test_a_run_is_recorded_once_per_window_and_skipped_while_running_elsewhere(
    conn: Conn, shared_db_url: str
) -> None:
    tenant = new_tenant()
    window = window_for(NOW, timedelta(minutes=5))
    scope = JobScope(NOW, tenant)
    first = run_job(conn, "supersede", CONFIG, scope, window=window, clock=lambda: NOW)
    second = run_job(conn, "supersede", CONFIG, scope, window=window, clock=lambda: NOW)
    assert (first.status, second.status) == ("done", "taken")
    [row] = conn.execute(
        "SELECT * FROM consolidation_runs WHERE tenant_id = %s", [tenant]
    ).fetchall()
    assert (row["job"], row["window_start"], row["window_end"]) == (
        "supersede",
        window.start,
        window.end,
    )
    assert row["finished_at"] == NOW and row["error"] is None and row["stats"]["tenants"] == 1
    with connect(shared_db_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [lock_key("merge")])
        busy = run_job(conn, "merge", CONFIG, scope, window=window, clock=lambda: NOW)
        assert busy.status == "busy"


def test_a_failed_run_records_its_error(conn: Conn, monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = new_tenant()

    def broken(*_: Any) -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(JOBS, "decay", broken)
    with pytest.raises(RuntimeError):
        run_job(
            conn,
            "decay",
            CONFIG,
            JobScope(NOW, tenant),
            window=point_window(NOW),
            clock=lambda: NOW,
        )
    row = conn.execute("SELECT * FROM consolidation_runs WHERE tenant_id = %s", [tenant]).fetchone()
    assert row is not None and row["error"] == "RuntimeError: disk on fire"


def test_a_tenant_run_never_touches_another_tenant(conn: Conn) -> None:
    mine, theirs = new_tenant(), new_tenant()
    build(conn, mine, BTC_THEN_ETH, at_build=False)
    build(conn, theirs, BTC_THEN_ETH, at_build=False)
    before = entries(conn, theirs)
    for job in ("supersede", "merge", "caps"):
        run(conn, job, mine, full=True)
    run(conn, "decay", mine, now=NOW + timedelta(days=400))
    assert entries(conn, theirs) == before
    assert entries(conn, mine, status="superseded")


def test_a_run_across_tenants_visits_only_tenants_with_new_changes(conn: Conn) -> None:
    first, second = new_tenant(), new_tenant()
    build(conn, first, BTC_THEN_ETH, at_build=False)
    build(conn, second, BTC_THEN_ETH, at_build=False)
    stats = run_job(
        conn, "supersede", CONFIG, JobScope(NOW), window=point_window(NOW), clock=lambda: NOW
    ).stats
    assert stats["tenants"] >= 2 and stats["superseded"] >= 2
    for tenant in (first, second):
        assert len(entries(conn, tenant, status="superseded")) == 1
    build(
        conn, second, [says(9, "My favorite cryptocurrency is SOL now.", DAY2 + timedelta(days=1))]
    )
    again = run_job(
        conn,
        "supersede",
        CONFIG,
        JobScope(NOW),
        window=point_window(NOW + timedelta(seconds=1)),
        clock=lambda: NOW,
    ).stats
    assert (again["tenants"], again["owners"]) == (1, 1)


def test_decay_archives_exactly_what_the_policy_decides(conn: Conn) -> None:
    """The SQL prefilter of decay candidates never hides an entry the policy archives."""
    tenant = new_tenant()
    rng = random.Random(5)
    kinds = ("episodic", "event", "experience", "session_summary", "preference")
    rows = []
    for i in range(300):
        recorded = NOW - timedelta(days=rng.uniform(0, 400))
        accessed = recorded + timedelta(days=rng.uniform(0, 100)) if rng.random() < 0.3 else None
        rows.append(
            (tenant, rng.choice(kinds), f"k:{i}", f"Statement {i}.", rng.random(), rng.random(),
             min(accessed, NOW) if accessed else None, rng.choice((0, 0, 1, 2, 5)), recorded)
        )  # fmt: skip
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
            " canonical_statement, confidence, importance, last_accessed_at, access_count,"
            " valid_from, recorded_at, source_event_ids, updated_at)"
            " VALUES (%s, 'user', 'maya', %s, %s, %s, %s, %s, %s, %s, %s, %s, '{1}', %s)",
            [(*r, r[-1], r[-1]) for r in rows],
        )
    before = [
        EntryState.from_row(r)
        for r in conn.execute("SELECT * FROM memory_entries WHERE tenant_id = %s", [tenant])
    ]
    policy = CONFIG.policy
    expected = {a.id for a in plan_decay(before, now=NOW, policy=policy)}
    assert 20 < len(expected) < 250
    stats = run(conn, "decay", tenant)
    assert {e["id"] for e in entries(conn, tenant, status="archived")} == expected
    assert stats["archived"] == len(expected)
