"""The retrieval gateway on real PostgreSQL and Redis: scope completeness at scale, scope
isolation, deterministic ranking, the bundle's budget, Redis down, access counts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from ledger import append
from ledger.db import Conn, connect, tenant_scope
from ledger.errors import MemledgerError
from ledger.events import Limits, parse_events
from ledger.store import AppendResult
from materializers import get_profile, project
from materializers.api import list_skills, review_skill
from observations.builder import BuildConfig, build_session, sessions_to_build
from observations.edits import list_owner_entries
from observations.embed import HashEmbedder, Vectors
from observations.extract.heuristic import HeuristicExtractor
from ops.bench.synthetic import Pool, copy_entries, entry_rows
from ops.services import drop_database, recreate_database
from ops.usecases.ingest import accepted_events
from retrieval.access import AccessLog
from retrieval.bundle import render_text
from retrieval.candidates import candidate_lists, scope_sql
from retrieval.context import ContextRequest, build_context, bundle_provenance
from retrieval.items import MemoryItem, SummaryItem
from retrieval.recent import RecentWindow, recent_messages
from retrieval.search import (
    Filters,
    InvalidQuery,
    Scope,
    SearchSettings,
    search,
    vector_search,
)
from retrieval.tokens import approx_count
from retrieval.types import Candidate, RetrievalWeights
from tests.events import message, replay, sample_events

NOW = datetime(2025, 10, 7, tzinfo=UTC)
MINILM = "all-MiniLM-L6-v2-int8"


class PoolEmbedder:
    """Embeds a query as the pool vector of the statement it names (else a random unit
    vector): stands in for the model so vectors at scale cost nothing to make."""

    def __init__(self, pool: Pool) -> None:
        self.pool, self.model, self.dim = pool, pool.model, pool.vectors.shape[1]

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = []
        for text in texts:
            hits = [i for i, s in enumerate(self.pool.statements) if s in text]
            out.append(self.pool.vectors[hits[0]] if hits else _unit(np.random.default_rng(0)))
        return np.array(out, dtype=np.float32)


def _unit(gen: np.random.Generator) -> Any:
    v = gen.normal(size=384).astype(np.float32)
    return v / np.linalg.norm(v)


def make_pool(n: int = 200) -> Pool:
    gen = np.random.default_rng(42)
    statements = [f"synthetic statement number {i} about topic {i % 17}" for i in range(n)]
    return Pool(statements, np.array([_unit(gen) for _ in range(n)]), MINILM)


@pytest.fixture(scope="module")
def large_db(admin_url: str, template_db: str) -> Iterator[tuple[str, Pool]]:
    """A database with 100,000 entries of one user, 20 of another, 50 of another tenant."""
    name = f"memledger_test_retrieval_{uuid.uuid4().hex[:8]}"
    url = recreate_database(admin_url, name, template_db)
    pool = make_pool()
    with connect(url, autocommit=True) as c:
        index = c.execute(  # built after loading, as the migrations define it
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_entries_embedding_minilm'"
        ).fetchone()
        assert index is not None
        c.execute("DROP INDEX memory_entries_embedding_minilm")
        start = NOW - timedelta(days=400)
        copy_entries(
            c, entry_rows("t1", [("big", 100_000), ("small", 20)], pool, start=start, seed=1)
        )
        copy_entries(c, entry_rows("t2", [("small", 50)], pool, start=start, seed=2))
        c.execute("SET maintenance_work_mem = '1GB'")
        c.execute(index["indexdef"].encode())
        c.execute("ANALYZE memory_entries")
    yield url, pool
    drop_database(admin_url, name)


@pytest.mark.parametrize("limit", [1, 10, 20, 50])
def test_small_user_beside_a_large_one_gets_every_result_it_has(
    large_db: tuple[str, Pool], limit: int
) -> None:
    url, pool = large_db
    with connect(url, autocommit=True) as c:
        for query in pool.statements[:5]:
            results = search(
                c, Scope("t1", "small"), query, embedder=PoolEmbedder(pool), now=NOW, limit=limit
            )
            assert len(results) == min(limit, 20)
            assert {r.candidate.owner_id for r in results} == {"small"}
            big = search(
                c, Scope("t1", "big"), query, embedder=PoolEmbedder(pool), now=NOW, limit=limit
            )
            assert len(big) == limit and {r.candidate.owner_id for r in big} == {"big"}


def test_vector_search_alone_returns_every_entry_of_a_small_scope_and_k_of_a_large_one(
    large_db: tuple[str, Pool],
) -> None:
    url, pool = large_db
    vector = pool.vectors[3]
    with connect(url, autocommit=True) as c:
        small = vector_search(c, Scope("t1", "small"), vector, embedder=PoolEmbedder(pool), k=50)
        big = vector_search(c, Scope("t1", "big"), vector, embedder=PoolEmbedder(pool), k=50)
    assert len(small) == 20 and {r.owner_id for r in small} == {"small"}
    assert len(big) == 50 and {r.owner_id for r in big} == {"big"}
    assert big[0].statement.startswith(pool.statements[3] + " (")
    similarities = [r.similarity or 0.0 for r in big]
    assert similarities == sorted(similarities, reverse=True)


def test_the_large_user_goes_through_hnsw(large_db: tuple[str, Pool]) -> None:
    url, pool = large_db
    with connect(url, autocommit=True) as c:
        hits = search(
            c,
            Scope("t1", "big"),
            pool.statements[3],
            embedder=PoolEmbedder(pool),
            now=NOW,
            limit=10,
        )
        # near-duplicates of the query's statement come first
        assert hits[0].candidate.statement.startswith(pool.statements[3] + " (")
        assert hits[0].explain["similarity"] > 0.9


def test_a_large_scope_with_history_finds_entries_no_longer_active(
    large_db: tuple[str, Pool],
) -> None:
    """The HNSW index holds active entries only: a large scope with history takes the
    others from an exact scan beside it."""
    url, pool = large_db
    vector, embedder, big = pool.vectors[5], PoolEmbedder(pool), Scope("t1", "big")
    with connect(url) as c:  # rolled back: the module's database is shared
        best = vector_search(c, big, vector, embedder=embedder, k=10)[0]
        with tenant_scope(c, "t1"):
            c.execute(
                "UPDATE memory_entries SET status = 'superseded' WHERE tenant_id = 't1'"
                " AND id = %s",
                [best.entry_id],
            )
        current = vector_search(c, big, vector, embedder=embedder, k=10)
        history = vector_search(
            c, big, vector, embedder=embedder, k=10, filters=Filters(history=True)
        )
        c.rollback()
    assert len(current) == 10 and best.entry_id not in {r.entry_id for r in current}
    assert len(history) == 10 and {r.owner_id for r in history} == {"big"}
    superseded = [r for r in history if r.entry_id == best.entry_id]
    assert superseded and superseded[0].status == "superseded"
    similarities = [r.similarity or 0.0 for r in history]
    assert similarities == sorted(similarities, reverse=True)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.text(min_size=1, max_size=40).filter(str.strip),
    user=st.sampled_from(["small", "big", "nobody"]),
    kinds=st.lists(
        st.sampled_from(["preference", "event", "'; DROP TABLE x; --", "%s"]), max_size=2
    ),
    history=st.booleans(),
)
def test_no_parameter_reaches_outside_the_scope(
    large_db: tuple[str, Pool], query: str, user: str, kinds: list[str], history: bool
) -> None:
    url, pool = large_db
    with connect(url, autocommit=True) as c:
        filters = Filters(kinds=tuple(kinds), history=history)
        results = search(
            c,
            Scope("t2", user),
            query,
            embedder=PoolEmbedder(pool),
            now=NOW,
            limit=50,
            filters=filters,
        )
        assert all(r.candidate.owner_id == user for r in results)
        assert all(r.candidate.owner_id == "small" for r in results)  # t2 has only "small"
        assert not kinds or all(r.candidate.kind in kinds for r in results)


def test_ranking_is_deterministic(large_db: tuple[str, Pool]) -> None:
    url, pool = large_db
    with connect(url, autocommit=True) as c:
        runs = [
            [
                (r.candidate.entry_id, r.score)
                for r in search(
                    c,
                    Scope("t1", "big"),
                    "topic 5 statement",
                    embedder=PoolEmbedder(pool),
                    now=NOW,
                    limit=20,
                )
            ]
            for _ in range(3)
        ]
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 20


@pytest.mark.parametrize(
    "scope", [lambda: Scope(""), lambda: Scope("t1", "bad id\n"), lambda: Scope("t1", None, "")]
)
def test_bad_scopes_are_refused(scope: Any) -> None:
    with pytest.raises(MemledgerError):
        scope()


def test_bad_queries_are_refused(conn: Conn) -> None:
    with pytest.raises(InvalidQuery, match="query"):
        search(conn, Scope("t1"), "  ", embedder=HashEmbedder(), now=NOW)
    with pytest.raises(InvalidQuery, match="limit"):
        search(conn, Scope("t1"), "x", embedder=HashEmbedder(), now=NOW, limit=0)


# ------------------------------------------------------------------ built sample, bundle


def build_sample(conn: Conn, tenant: str) -> None:
    replay(conn, tenant, sample_events(), now=NOW)
    config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
    for t, sid in sessions_to_build(conn, now=NOW):
        if t == tenant:
            build_session(conn, tenant, sid, config, now=NOW)


def test_user_scope_sees_own_facts_and_own_sessions_only(conn: Conn) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)
    maya = search(
        conn,
        Scope(tenant, "maya"),
        "peanut allergy restaurant",
        embedder=HashEmbedder(),
        now=NOW,
        limit=50,
    )
    assert maya and maya[0].candidate.owner_id == "maya"
    for r in maya:
        c = r.candidate
        assert (c.owner_type, c.owner_id) == ("user", "maya") or "maya" in c.fields[
            "participant_ids"
        ]
    other = search(
        conn, Scope(f"{tenant}-other", "maya"), "peanut", embedder=HashEmbedder(), now=NOW
    )
    assert other == []


def test_a_channels_summaries_are_in_the_scope_of_the_users_of_their_own_session(
    conn: Conn,
) -> None:
    """One channel, two sessions: Maya and Tom in the first, Maya and Ada in the second.
    Each session's summary is in the scope of its own participants only, found through
    the channel participants table, which holds each tenant's rows alone."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    start = NOW - timedelta(days=3)
    turns = [
        ("maya", "We should plan the hiking trip to the Alps this summer."),
        ("tom", "I can book the mountain hut for the hiking trip."),
        ("maya", "The pottery class moved the kiln day to Thursday."),
        ("ada", "I will bring the glazes for the pottery kiln on Thursday."),
    ]
    events = [
        message(f"m{i}", start + timedelta(days=i // 2, minutes=i), channel="team",
                actor=actor, content=text)
        for i, (actor, text) in enumerate(turns)
    ]  # fmt: skip
    for t in (tenant, f"{tenant}-other"):
        replay(conn, t, events, now=NOW)
        config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
        for built_tenant, sid in sessions_to_build(conn, now=NOW):
            if built_tenant == t:
                build_session(conn, t, sid, config, now=NOW)

    def summaries(user: str) -> set[str]:
        found = search(
            conn, Scope(tenant, user), "hiking pottery kiln", embedder=HashEmbedder(), now=NOW,
            limit=50, settings=SearchSettings(weights=RetrievalWeights(min_score=0)),
        )  # fmt: skip
        return {
            " ".join(sorted(r.candidate.fields["participant_ids"]))
            for r in found
            if r.candidate.owner_type == "channel"
        }

    assert summaries("maya") == {"maya tom", "ada maya"}
    assert summaries("tom") == {"maya tom"}
    assert summaries("ada") == {"ada maya"}
    assert summaries("bob") == set()
    with tenant_scope(conn, tenant):
        rows = conn.execute(
            "SELECT tenant_id, channel_id, user_id FROM memory_channel_participants"
        ).fetchall()
    assert sorted((r["tenant_id"], r["channel_id"], r["user_id"]) for r in rows) == [
        (tenant, "team", "ada"), (tenant, "team", "maya"), (tenant, "team", "tom")
    ]  # fmt: skip


def test_a_user_and_agent_scope_shows_what_the_agent_learnt_from_that_user_only(
    conn: Conn,
) -> None:
    """Atlas served Maya and Tom: Maya's scope with Atlas holds Atlas's experiences of
    Maya's requests, never of Tom's; Atlas's own scope holds both."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)

    def learnt_from(scope: Scope) -> set[str]:
        found = search(conn, scope, "book a train", embedder=HashEmbedder(), now=NOW, limit=200)
        agents = [r.candidate for r in found if r.candidate.owner_type == "agent"]
        return {a for c in agents for a in c.fields["source_actor_ids"]} - {"atlas"}

    assert learnt_from(Scope(tenant, agent_id="atlas")) == {"maya", "tom"}
    assert learnt_from(Scope(tenant, "maya", "atlas")) == {"maya"}
    assert learnt_from(Scope(tenant, "tom", "atlas")) == {"tom"}
    _, page = list_owner_entries(
        conn, tenant, user_id="maya", agent_id="atlas", limit=1000, offset=0
    )  # Mem0's get_all
    agents = [r for r in page if r["owner_type"] == "agent"]
    assert agents and all("tom" not in r["fields"]["source_actor_ids"] for r in agents)


def test_full_text_matches_cut_at_the_scan_limit_are_the_newest_with_their_similarity(
    conn: Conn,
) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)
    scope = scope_sql(Scope(tenant, "maya"), Filters())
    with tenant_scope(conn, tenant):
        every = sql.SQL(
            "SELECT id FROM memory_entries WHERE {scope}"
            " AND tsv @@ websearch_to_tsquery('english', 'maya') ORDER BY id"
        ).format(scope=scope.where)
        matching = [r["id"] for r in conn.execute(every, scope.params)]
        embedder = HashEmbedder()
        vector = embedder.embed(["maya"])[0]
        settings = SearchSettings(text_scan=3)
        _, found = candidate_lists(conn, scope, "maya", vector, embedder, 50, settings)
    every_entry = vector_search(conn, Scope(tenant, "maya"), vector, embedder=embedder, k=1000)
    nearest = {c.entry_id: c.similarity for c in every_entry}
    assert len(matching) > 3
    assert sorted(c.entry_id for c in found) == matching[-3:]
    # a hit fetched by its words carries the similarity the vector list would give it
    assert all(c.similarity == pytest.approx(nearest[c.entry_id]) for c in found)


def test_one_read_of_a_small_scope_ranks_it_as_the_vector_path_does(conn: Conn) -> None:
    """Below the full-text cap, one statement ranks the scope exactly and matches its
    words: the same vector list as the vector path's; past the cap, the full-text list is
    the vector list reranked by its words."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)
    embedder = HashEmbedder()
    vector = embedder.embed(["what does maya cook"])[0]
    scope = scope_sql(Scope(tenant, "maya"), Filters())

    def lists(settings: SearchSettings) -> tuple[list[Candidate], list[Candidate]]:
        with tenant_scope(conn, tenant):
            return candidate_lists(
                conn, scope, "what does maya cook", vector, embedder, 20, settings
            )

    nearest = vector_search(conn, Scope(tenant, "maya"), vector, embedder=embedder, k=20)
    one_read, text = lists(SearchSettings())
    by_parts, reranked = lists(SearchSettings(text_scope_cap=1))

    def ranked(items: list[Candidate]) -> list[tuple[int, float | None]]:
        return [(c.entry_id, c.similarity) for c in items]

    assert len(nearest) == 20 and text
    assert ranked(one_read) == ranked(by_parts) == ranked(nearest)
    assert all("maya" in c.statement.lower() or "cook" in c.statement.lower() for c in text)
    assert {c.entry_id for c in reranked} <= {c.entry_id for c in by_parts}


@pytest.mark.parametrize("budget", [60, 150, 400, 1000])
def test_bundle_stays_under_budget_with_whole_items(conn: Conn, budget: int) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)
    request = ContextRequest(
        scope=Scope(tenant, "maya"), query="what should I cook for Maya?", budget_tokens=budget
    )
    bundle = build_context(conn, request, embedder=HashEmbedder(), counter=approx_count, now=NOW)
    text = render_text(bundle)
    assert approx_count(text) <= bundle.used_tokens <= budget
    assert all(m.statement in text for m in bundle.memories)
    assert all(s.statement in text for s in bundle.summaries)
    assert all(p.external_ids for p in bundle_provenance(bundle))


def test_recent_messages_come_from_redis_and_from_the_ledger_when_redis_is_down(
    conn: Conn, redis_url: str
) -> None:
    tenant, events, stored = open_dm(conn, 4)  # one open session
    up = RecentWindow.from_url(redis_url, size=3)
    assert up.record(tenant, stored)
    from_redis = recent_messages(conn, up, tenant, "dm-maya", limit=3)
    down = RecentWindow.from_url("redis://127.0.0.1:1/0", size=3)  # nothing listens there
    assert down.record(tenant, stored) is False
    from_ledger = recent_messages(conn, down, tenant, "dm-maya", limit=3)
    assert [m.content for m in from_redis] == [m.content for m in from_ledger]
    assert [m.external_id for m in from_ledger] == [e["external_id"] for e in events[1:]]
    request = ContextRequest(scope=Scope(tenant, "maya"), query="hello", budget_tokens=500)
    bundle = build_context(
        conn, request, embedder=HashEmbedder(), counter=approx_count, now=NOW, recent=from_ledger
    )
    assert [m.content for m in bundle.recent] == [m.content for m in from_ledger]


def test_a_window_that_lost_some_of_the_sessions_messages_gives_way_to_the_ledger(
    conn: Conn, redis_url: str
) -> None:
    tenant, events, stored = open_dm(conn, 4)
    window = RecentWindow.from_url(redis_url, size=3)
    assert window.record(tenant, stored[-1:])  # the others' record failed
    recent = recent_messages(conn, window, tenant, "dm-maya", limit=3)
    assert [m.external_id for m in recent] == [e["external_id"] for e in events[1:]]


def test_recent_messages_are_only_for_someone_who_took_part_in_the_session(
    conn: Conn, redis_url: str
) -> None:
    tenant, _, stored = open_dm(conn, 4)
    window = RecentWindow.from_url(redis_url, size=3)
    assert window.record(tenant, stored)
    for source in (window, None):  # from Redis, and from the ledger
        assert recent_messages(conn, source, tenant, "dm-maya", limit=3, participant="maya")
        assert recent_messages(conn, source, tenant, "dm-maya", limit=3, participant="leo") == []


def test_recent_messages_are_the_same_from_the_window_and_from_the_ledger(
    conn: Conn, redis_url: str
) -> None:
    """Event ids included: the window is a cache of what the ledger holds."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    events = [e for e in sample_events() if e["channel_id"] == "dm-maya"][:4]
    result = append(conn, tenant, events, now=NOW)
    window = RecentWindow.from_url(redis_url, size=3)
    parsed = parse_events(events, now=NOW, limits=Limits())
    assert window.record(tenant, accepted_events(parsed, result))
    from_redis = recent_messages(conn, window, tenant, "dm-maya", limit=3)
    assert window.cached(tenant, "dm-maya")  # it came from Redis
    assert from_redis == recent_messages(conn, None, tenant, "dm-maya", limit=3)
    assert all(m.event_id is not None for m in from_redis)


def open_dm(conn: Conn, n: int) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """A new tenant with the first ``n`` messages of the sample's dm-maya chat appended
    (one open session): the tenant, the events sent, and the events as stored."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    events = [e for e in sample_events() if e["channel_id"] == "dm-maya"][:n]
    return tenant, events, _stored(events, append(conn, tenant, events, now=NOW))


def _stored(events: list[dict[str, Any]], result: AppendResult) -> list[dict[str, Any]]:
    """The events as stored: with their session, times parsed."""
    return [
        {**e, "session_id": o.session_id, "occurred_at": datetime.fromisoformat(e["occurred_at"])}
        for e, o in zip(events, result.outcomes, strict=True)
    ]


def test_the_window_keeps_the_newest_messages_whatever_order_they_are_recorded_in(
    conn: Conn, redis_url: str
) -> None:
    tenant, events, stored = open_dm(conn, 5)
    window = RecentWindow.from_url(redis_url, size=3)
    assert window.record(tenant, stored[3:])  # a later delivery recorded first
    assert window.record(tenant, stored[:3])
    from_redis = recent_messages(conn, window, tenant, "dm-maya", limit=3)
    assert [m.external_id for m in from_redis] == [e["external_id"] for e in events[2:]]
    cached = window.cached(tenant, "dm-maya")
    assert cached is not None and len(cached) == 3


def test_windows_of_tenants_whose_ids_run_into_their_channels_stay_apart(
    conn: Conn, redis_url: str
) -> None:
    """Tenant "<t>:x" on channel "dm-maya" and tenant "<t>" on channel "x:dm-maya" name
    different windows, though their ids joined by ":" read the same."""
    base = f"t-{uuid.uuid4().hex[:8]}"
    events = [e for e in sample_events() if e["channel_id"] == "dm-maya"][:4]
    window = RecentWindow.from_url(redis_url, size=10)
    mine = [{**e, "channel_id": "x:dm-maya"} for e in events[:2]]
    theirs = events[2:]
    with window.client:
        assert window.record(base, _stored(mine, append(conn, base, mine, now=NOW)))
        stored = _stored(theirs, append(conn, f"{base}:x", theirs, now=NOW))
        assert window.record(f"{base}:x", stored)
        own = window.cached(base, "x:dm-maya")
        other = window.cached(f"{base}:x", "dm-maya")
    assert own is not None and other is not None
    assert sorted(m["external_id"] for m in own) == sorted(e["external_id"] for e in mine)
    assert sorted(m["external_id"] for m in other) == sorted(e["external_id"] for e in theirs)


def test_access_counts_are_written_in_one_batch(conn: Conn) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)
    hits = search(conn, Scope(tenant), "peanut allergy", embedder=HashEmbedder(), now=NOW, limit=3)
    log = AccessLog()
    ids = [h.candidate.entry_id for h in hits]
    log.record(tenant, ids, NOW)
    log.record(tenant, ids[:1], NOW + timedelta(hours=1))
    assert log.pending == len(ids)
    assert log.flush(conn) == len(ids) and log.pending == 0
    rows = conn.execute(
        "SELECT id, access_count, last_accessed_at FROM memory_entries WHERE id = ANY(%s)", [ids]
    ).fetchall()
    counts = {r["id"]: (r["access_count"], r["last_accessed_at"]) for r in rows}
    assert counts[ids[0]] == (2, NOW + timedelta(hours=1))
    assert all(counts[i] == (1, NOW + timedelta(hours=1)) for i in ids[1:])


def test_the_bundle_shows_the_profile_read_model_and_the_ranking_of_search(conn: Conn) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)
    project(conn, tenant, now=NOW)
    rows = get_profile(conn, tenant, "maya")
    assert rows, "the sample states facts about maya"
    top = max(rows, key=lambda r: r.confidence)
    conn.execute(  # a second key stating the same as the top one, less sure: shown once
        "INSERT INTO user_profile (tenant_id, user_id, key, value, statement, confidence,"
        " source_entry_ids, valid_from, updated_at)"
        " VALUES (%s, 'maya', 'zz-same', 'v', %s, %s, %s, %s, %s)",
        [tenant, top.statement, top.confidence / 2, list(top.source_entry_ids), NOW, NOW],
    )
    query = "what should I cook for Maya?"
    request = ContextRequest(scope=Scope(tenant, "maya"), query=query, budget_tokens=100_000)
    bundle = build_context(conn, request, embedder=HashEmbedder(), counter=approx_count, now=NOW)

    expected: list[tuple[str, str]] = []
    for r in sorted(get_profile(conn, tenant, "maya"), key=lambda r: (-r.confidence, r.key)):
        if r.statement not in {s for _, s in expected}:
            expected.append((r.key, r.statement))
    assert [(p.key, p.statement) for p in bundle.profile] == expected
    assert "zz-same" not in {p.key for p in bundle.profile}
    ranked = search(conn, Scope(tenant, "maya"), query, embedder=HashEmbedder(), now=NOW, limit=40)
    shown: list[MemoryItem | SummaryItem] = [*bundle.memories, *bundle.summaries]
    assert sum(bundle.dropped.values()) == 0
    assert sorted((m.score, m.provenance.entry_ids) for m in shown) == sorted(
        (s.score, (s.candidate.entry_id,)) for s in ranked
    )
    summaries = [s for s in ranked if s.candidate.kind == "session_summary"]
    assert [m.provenance.entry_ids[0] for m in bundle.summaries] == [
        s.candidate.entry_id for s in summaries
    ]


def _sources(conn: Conn, entry_ids: Sequence[int]) -> tuple[list[int], list[str]]:
    """The ledger events and external ids of entries, in order, each once."""
    rows = {
        r["id"]: r
        for r in conn.execute(
            "SELECT id, source_event_ids, source_external_ids FROM memory_entries"
            " WHERE id = ANY(%s)",
            [list(entry_ids)],
        )
    }
    events = [e for i in entry_ids for e in rows[i]["source_event_ids"]]
    external = [x for i in entry_ids for x in rows[i]["source_external_ids"]]
    return list(dict.fromkeys(events)), list(dict.fromkeys(external))


def test_profile_and_skill_items_carry_the_provenance_of_their_entries(conn: Conn) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    build_sample(conn, tenant)
    project(conn, tenant, now=NOW)
    [skill] = [s for s in list_skills(conn, tenant, agent_id="atlas") if s.evidence_count == 2]
    review_skill(conn, tenant, skill.id, "publish", "ops", None, now=NOW)
    request = ContextRequest(
        scope=Scope(tenant, "maya", "atlas"), query=f"{skill.goal}?", budget_tokens=100_000
    )
    bundle = build_context(conn, request, embedder=HashEmbedder(), counter=approx_count, now=NOW)
    rows = {r.key: r for r in get_profile(conn, tenant, "maya")}
    assert bundle.profile and bundle.skills
    for item in bundle.profile:
        p = item.provenance
        assert p.entry_ids == rows[item.key].source_entry_ids
        assert (list(p.event_ids), list(p.external_ids)) == _sources(conn, p.entry_ids)
        assert p.event_ids and p.session_id is not None
    [shown] = [s for s in bundle.skills if s.skill_key == skill.skill_key]
    p = shown.provenance
    authors = {
        r["id"]: set(r["fields"]["source_actor_ids"])
        for r in conn.execute(
            "SELECT id, fields FROM memory_entries WHERE id = ANY(%s)",
            [list(skill.source_entry_ids)],
        )
    }
    assert set().union(*authors.values()) > {"maya", "atlas"}, "atlas learnt it from others too"
    # in maya's bundle, the provenance of what atlas learnt from her alone
    learnt_from_maya = tuple(i for i in skill.source_entry_ids if authors[i] <= {"maya", "atlas"})
    assert p.entry_ids == learnt_from_maya
    assert (list(p.event_ids), list(p.external_ids)) == _sources(conn, p.entry_ids)
    assert p.event_ids and p.session_id is not None
