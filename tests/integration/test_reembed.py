"""Re-embedding the store into another model on a real PostgreSQL: the walk resumes after a
kill, searches read the old model until the switch and the new one after it (never a mix,
even for a search that read the pointer just before the switch committed), entries added
or rewritten during the walk are caught at the switch, and writers embed with the model
the database reads.

The sample transcript is built with the hash embedder at 64 dimensions; the re-embed goes
to 32 (another model as far as the store knows: another name and width).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from ledger import append, sweep_idle
from ledger.db import Conn, connect
from observations.builder import BuildConfig, build_session
from observations.edits import edit_entry
from observations.embed import Embedder, HashEmbedder, Vectors, stored_entry_text
from observations.embed_hash import hash_embedder_named
from observations.embed_models import (
    Embedders,
    EmbeddingModelUnavailable,
    embedder_for,
    read_model,
    record_read_model,
)
from observations.extract.heuristic import HeuristicExtractor
from observations.reembed import NoReembed, ReembedInProgress, begin, cancel, step, switch
from ops.usecases.reembed import run
from retrieval.search import Scope, search
from tests.integration.test_builder import NOW, Waiting, build_all, ingest_sample, new_tenant

OLD, NEW = HashEmbedder(64), HashEmbedder(32)
QUESTION = "what kind of seats does Maya prefer when she flies"


@pytest.fixture
def conn_fresh(fresh_db_url: str) -> Iterator[Conn]:
    """A database of its own (a re-embed covers every tenant), committing as it goes."""
    with connect(fresh_db_url, autocommit=True) as conn:
        yield conn


def embedders(configured: Embedder = OLD) -> Embedders:
    return Embedders(configured, hash_embedder_named)


def built_store(conn: Conn, tenants: int = 2) -> list[str]:
    """Tenants with the sample built in the old model, which the database reads."""
    names = [new_tenant() for _ in range(tenants)]
    for tenant in names:
        ingest_sample(conn, tenant)
        build_all(conn, tenant, BuildConfig(HeuristicExtractor(), OLD))
    assert record_read_model(conn, OLD.model, now=NOW) == OLD.model
    return names


def models(conn: Conn) -> dict[str, int]:
    rows = conn.execute(
        "SELECT embedding_model AS m, count(*) AS n FROM memory_entries"
        " WHERE embedding IS NOT NULL GROUP BY 1"
    ).fetchall()
    return {r["m"]: r["n"] for r in rows}


def ask(conn: Conn, tenant: str, embedder: Embedder) -> list[tuple[int, float | None]]:
    results = search(conn, Scope(tenant, "maya"), QUESTION, embedder=embedder, now=NOW, limit=8)
    return [(r.candidate.entry_id, r.candidate.similarity) for r in results]


def assert_stored_in(conn: Conn, embedder: Embedder) -> None:
    """Every entry's vector is ``embedder``'s embedding of its text (halfvec precision)."""
    rows = conn.execute(
        "SELECT owner_id, kind, canonical_statement, fields, valid_from, embedding_model,"
        " embedding::text AS v FROM memory_entries WHERE embedding IS NOT NULL ORDER BY id"
    ).fetchall()
    texts = [stored_entry_text(r, embedder.model) for r in rows]
    stored = np.array([np.fromstring(r["v"].strip("[]"), sep=",") for r in rows])
    assert {r["embedding_model"] for r in rows} == {embedder.model}
    np.testing.assert_allclose(stored, embedder.embed(texts), atol=2e-3)


def test_a_killed_reembed_resumes_and_reads_stay_on_the_old_model_until_the_switch(
    fresh_db_url: str, redis_url: str, tmp_path: Path
) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        tenants = built_store(conn)
        before = {t: ask(conn, t, embedders()) for t in tenants}
        assert all(before.values()) and all(s is not None for r in before.values() for _, s in r)
        total = sum(models(conn).values())
        env = {
            **os.environ,
            "MEMLEDGER_HOME": str(tmp_path),
            "MEMLEDGER_DATABASE_URL": fresh_db_url,
            "MEMLEDGER_REDIS_URL": redis_url,
            "MEMLEDGER_EMBEDDER": "hash",
        }
        memledger = str(Path(sys.executable).with_name("memledger"))
        command = [memledger, "reembed", "--model", NEW.model]
        slow = subprocess.Popen(
            [*command, "--batch", "4", "--rate", "40"], env=env, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            while _done(conn) < 12:
                assert time.monotonic() < deadline and slow.poll() is None
                for tenant in tenants:  # reads meanwhile: the old model, the same answers
                    assert ask(conn, tenant, embedders()) == before[tenant]
                time.sleep(0.05)
        finally:
            slow.send_signal(signal.SIGKILL)
            slow.wait()
        done = _done(conn)
        assert 12 <= done < total  # killed mid-way, its batches kept
        status = subprocess.run(
            [memledger, "reembed", "--status"], env=env, capture_output=True, text=True,
            timeout=60, check=True,
        ).stdout  # fmt: skip
        assert f"reads: {OLD.model}\n" in status
        assert f"re-embed into {NEW.model} under way since " in status
        assert f"{done} entries embedded, {total - done} to go" in status
        assert read_model(conn) == OLD.model and models(conn) == {OLD.model: total}
        for tenant in tenants:
            assert ask(conn, tenant, embedders()) == before[tenant]

        finished = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=120, check=True
        )
        assert f"resumed; {total - done} entries embedded, {total} moved" in finished.stdout
        assert f"from {OLD.model} to {NEW.model}" in finished.stdout
        assert read_model(conn) == NEW.model
        assert_stored_in(conn, NEW)
        assert conn.execute("SELECT count(*) AS n FROM memory_entry_vectors").fetchone() == {"n": 0}
        for tenant in tenants:  # a process configured with the old model follows the switch
            after = ask(conn, tenant, embedders())
            assert after and all(s is not None for _, s in after)
            assert after == ask(conn, tenant, NEW)


def _done(conn: Conn) -> int:
    row = conn.execute("SELECT done FROM memledger_reembed").fetchone()
    return int(row["done"]) if row else 0


class Paused:
    """An embedder whose first query waits until ``release`` is set: the search has read
    which model to use, and waits there while the test switches models."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model, self.dim = inner, inner.model, inner.dim
        self.waiting, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.waiting.is_set():
            self.waiting.set()
            assert self.release.wait(30)
        return self.inner.embed(texts)


def test_a_search_that_read_the_old_model_before_the_switch_still_ranks_by_its_vectors(
    fresh_db_url: str,
) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        (tenant,) = built_store(conn, tenants=1)
        expected = ask(conn, tenant, embedders())
        begin(conn, NEW.model, missing_only=False, now=NOW)
        while step(conn, NEW, batch=50, now=NOW):
            pass
        paused = Paused(OLD)
        results: list[list[tuple[int, float | None]]] = []
        with connect(fresh_db_url, autocommit=True) as reader:
            thread = threading.Thread(target=lambda: results.append(ask(reader, tenant, paused)))
            thread.start()
            assert paused.waiting.wait(30)
            switch(conn, NEW, now=NOW)  # commits while the search waits in its snapshot
            assert read_model(conn) == NEW.model
            paused.release.set()
            thread.join(30)
        assert results == [expected]  # the old vectors, every one with its similarity
        assert ask(conn, tenant, embedders()) == ask(conn, tenant, NEW)


def test_entries_written_during_the_walk_are_embedded_at_the_switch(conn_fresh: Conn) -> None:
    conn = conn_fresh
    (tenant,) = built_store(conn, tenants=1)
    begin(conn, NEW.model, missing_only=False, now=NOW)
    while step(conn, NEW, batch=50, now=NOW):
        pass
    # behind the walk: an edit, and a new session built (by a process configured with NEW:
    # it still writes what the database reads)
    entry = conn.execute(
        "SELECT id FROM memory_entries WHERE tenant_id = %s AND status = 'active'"
        " AND kind = 'preference' ORDER BY id LIMIT 1",
        [tenant],
    ).fetchone()
    assert entry is not None
    edit_entry(
        conn,
        tenant,
        entry["id"],
        "Maya Chen prefers aisle seats on long flights.",
        embedder=embedders(NEW),
        actor="test",
        now=NOW,
    )
    later = NOW + timedelta(days=30)
    events = [
        {
            "external_id": f"late-{i}",
            "channel_id": "late",
            "actor_id": "maya",
            "actor_name": "Maya Chen",
            "role": "user",
            "content": text,
            "occurred_at": (later + timedelta(minutes=i)).isoformat(),
        }
        for i, text in enumerate(["I adopted a cat named Miso last week.", "She loves boxes."])
    ]
    append(conn, tenant, events, now=later)
    ((_, session_id),) = sweep_idle(conn, now=later + timedelta(days=1), tenant_id=tenant)
    config = BuildConfig(HeuristicExtractor(), embedders(NEW))
    assert build_session(conn, tenant, session_id, config, now=later).status == "built"
    assert set(models(conn)) == {OLD.model}  # written in the model the database reads

    switch(conn, NEW, now=later)
    assert_stored_in(conn, NEW)
    assert read_model(conn) == NEW.model
    versions = conn.execute("SELECT DISTINCT build_version AS v FROM memory_sessions").fetchall()
    assert {r["v"] for r in versions} == {f"heuristic-{HeuristicExtractor.version}+{NEW.model}"}
    # a build with the new model finds the session built as it would build it
    assert build_session(conn, tenant, session_id, config, now=later).status == "unchanged"


def test_a_build_whose_extraction_spans_a_switch_writes_the_new_model(
    fresh_db_url: str,
) -> None:
    with connect(fresh_db_url, autocommit=True) as conn, ThreadPoolExecutor(1) as pool:
        (tenant,) = built_store(conn, tenants=1)
        late = [
            {"external_id": "late-1", "channel_id": "late", "actor_id": "maya",
             "actor_name": "Maya Chen", "role": "user",
             "content": "I adopted a cat named Miso last week.",
             "occurred_at": (NOW + timedelta(days=30)).isoformat()},
        ]  # fmt: skip
        append(conn, tenant, late, now=NOW + timedelta(days=30))
        ((_, session_id),) = sweep_idle(conn, now=NOW + timedelta(days=31), tenant_id=tenant)
        slow = Waiting()
        with connect(fresh_db_url, autocommit=True) as builder:
            # configured with NEW, the process reads OLD when the build starts
            config = BuildConfig(slow, embedders(NEW))
            build = pool.submit(build_session, builder, tenant, session_id, config, now=NOW)
            assert slow.started.wait(30)
            begin(conn, NEW.model, missing_only=False, now=NOW)
            while step(conn, NEW, batch=50, now=NOW):
                pass
            switch(conn, NEW, now=NOW)  # while the build extracts: it holds no lock yet
            slow.go.set()
            assert build.result(timeout=30).status == "built"
        assert_stored_in(conn, NEW)


def test_one_reembed_at_a_time_and_a_cancel_drops_its_vectors(conn_fresh: Conn) -> None:
    conn = conn_fresh
    built_store(conn, tenants=1)
    job, resumed = begin(conn, NEW.model, missing_only=False, now=NOW)
    assert not resumed and job.after_id == 0
    assert step(conn, NEW, batch=5, now=NOW) == 5
    with pytest.raises(ReembedInProgress, match="other options"):
        begin(conn, HashEmbedder(16).model, missing_only=False, now=NOW)
    with pytest.raises(ReembedInProgress, match="another model"):
        step(conn, HashEmbedder(16), batch=5, now=NOW)
    assert begin(conn, NEW.model, missing_only=False, now=NOW)[1]  # resumed
    assert cancel(conn) == NEW.model
    assert conn.execute("SELECT count(*) AS n FROM memory_entry_vectors").fetchone() == {"n": 0}
    with pytest.raises(NoReembed):
        cancel(conn)
    with pytest.raises(NoReembed):
        switch(conn, NEW, now=NOW)
    assert read_model(conn) == OLD.model


def test_missing_only_skips_what_is_in_the_model_already(conn_fresh: Conn) -> None:
    conn = conn_fresh
    built_store(conn, tenants=1)
    conn.execute("UPDATE memledger_embedding SET read_model = NULL")
    (tenant,) = [new_tenant()]
    ingest_sample(conn, tenant)
    build_all(conn, tenant, BuildConfig(HeuristicExtractor(), NEW))  # a mixed store
    counts = models(conn)
    outcome = run(conn, NEW, missing_only=True, batch=16, rate=None, clock=lambda: NOW)
    assert outcome.embedded == counts[OLD.model] and outcome.switched == counts[OLD.model]
    assert_stored_in(conn, NEW)


def test_a_model_no_embedder_can_compute_is_a_typed_error() -> None:
    with pytest.raises(EmbeddingModelUnavailable, match="cannot compute") as caught:
        embedder_for(embedders(), "text-embedding-3-large")
    assert caught.value.fields["model"] == "text-embedding-3-large"
    with pytest.raises(EmbeddingModelUnavailable):
        embedder_for(OLD, NEW.model)  # a bare embedder knows no other model
