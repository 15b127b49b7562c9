"""The observation builder on a real PostgreSQL: provenance back to real events, lineage
and history rows, idempotent rebuilds, new build versions, failures that write nothing,
the retry queue, locking between builders, and tenant isolation.

The bundled sample transcript (two users, one assistant, five sessions over a month,
tool calls included) is appended through the ledger, closed at its end, and built
with the heuristic extractor and the deterministic hash embedder.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from ledger import SessionNotFound, append, list_sessions, sweep_idle
from ledger.db import Conn, connect
from materializers import get_profile, project
from observations.builder import (
    MEMORY_METADATA,
    BuildConfig,
    BuildOutcome,
    SessionNotClosed,
    build_session,
    list_entries,
    load_session_input,
    record_failure,
    sessions_to_build,
    waiting_builds,
)
from observations.edits import delete_entry, delete_owner_entries, edit_entry, entry_history
from observations.embed import (
    HashEmbedder,
    Vectors,
    contextualize,
    make_embedder,
    stored_entry_text,
)
from observations.embed_local import QUANTIZED_MODEL_NAME, ROWS_MODEL_NAME
from observations.extract.base import (
    FACT_KINDS,
    SESSION_SUMMARY,
    Extracted,
    Extraction,
    SessionInput,
)
from observations.extract.heuristic import HeuristicExtractor
from observations.gates import GATES
from tests.events import replay, sample_events, says
from tests.lock_waits import wait_until_blocked

NOW = datetime(2025, 10, 7, tzinfo=UTC)  # after the sample's last event (6 Oct, 18:33 UTC)
LATER = NOW + timedelta(days=1)
BACKOFF = timedelta(seconds=30)
TABLES = (
    "memory_sessions",
    "memory_observations",
    "memory_entries",
    "memory_links",
    "memory_entry_history",
)
Row = dict[str, Any]


# ------------------------------------------------------------------------------ helpers


def new_tenant() -> str:
    return f"tb-{uuid.uuid4().hex[:10]}"


def ingest_sample(conn: Conn, tenant: str, *, close: bool = True) -> list[Row]:
    """Append the sample transcript; with ``close``, its end closes the sessions still
    open."""
    events = sample_events()
    result = (replay if close else append)(conn, tenant, events, now=NOW)
    assert result.accepted == len(events)
    return list_sessions(conn, tenant)


def hash_config() -> BuildConfig:
    return BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())


def built_sample(conn: Conn) -> str:
    """A new tenant with the sample ingested and every session built."""
    tenant = new_tenant()
    ingest_sample(conn, tenant)
    build_all(conn, tenant, hash_config())
    return tenant


def build_all(conn: Conn, tenant: str, config: BuildConfig) -> dict[int, BuildOutcome]:
    return {
        s["id"]: build_session(conn, tenant, s["id"], config, now=NOW)
        for s in list_sessions(conn, tenant)
    }


def snapshot(conn: Conn, tenant: str) -> dict[str, list[Any]]:
    """Every row the builder can touch for the tenant, as JSON (vectors as text)."""
    return {
        table: [
            r["row"]
            for r in conn.execute(
                sql.SQL(
                    "SELECT to_jsonb(x) AS row FROM {} x WHERE tenant_id = %s ORDER BY id"
                ).format(sql.Identifier(table)),
                [tenant],
            ).fetchall()
        ]
        for table in TABLES
    }


def rows(conn: Conn, table: str, tenant: str, where: str = "TRUE", *args: Any) -> list[Row]:
    query = sql.SQL("SELECT * FROM {} WHERE tenant_id = %s AND {} ORDER BY id").format(
        sql.Identifier(table),
        sql.SQL(where),
    )
    return conn.execute(query, [tenant, *args]).fetchall()


def session_row(conn: Conn, tenant: str, session_id: int) -> Row:
    return rows(conn, "memory_sessions", tenant, "id = %s", session_id)[0]


def history_actions(conn: Conn, tenant: str, entry_id: int) -> list[str]:
    return [
        h["action"] for h in rows(conn, "memory_entry_history", tenant, "entry_id = %s", entry_id)
    ]


class Revised:
    """The heuristic extractor under another version, with some items rewritten or gone."""

    name = "heuristic"

    def __init__(
        self, version: str, revise: Callable[[Extracted], Extracted | None] = lambda i: i
    ) -> None:
        self.version = version
        self.revise = revise
        self.inner = HeuristicExtractor()

    def extract(self, session: SessionInput) -> Extraction:
        items = [self.revise(item) for item in self.inner.extract(session).items]
        return Extraction(tuple(i for i in items if i is not None), self.name, self.version)


class FailingExtractor:
    name = "heuristic"
    version = "1"

    def extract(self, session: SessionInput) -> Extraction:
        raise RuntimeError(f"extractor crashed on session {session.session_id}")


class NaNEmbedder:
    """Returns a NaN in its last vector: PostgreSQL refuses it when the entries are written,
    after the session's observations are."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.model, self.dim = self.inner.model, self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        vectors = self.inner.embed(texts)
        vectors[-1, 0] = float("nan")
        return vectors


# ------------------------------------------------------------------------------ provenance


def test_built_entries_name_real_events_of_their_own_session(conn: Conn) -> None:
    tenant = new_tenant()
    sessions = ingest_sample(conn, tenant)
    assert len(sessions) == 5 and {s["status"] for s in sessions} == {"closed"}
    outcomes = build_all(conn, tenant, hash_config())
    assert {o.status for o in outcomes.values()} == {"built"}

    events = {e["id"]: e for e in rows(conn, "memory_session_events", tenant)}
    entries = rows(conn, "memory_entries", tenant)
    assert len(entries) == sum(o.entries for o in outcomes.values()) >= len(sessions)
    for entry in entries:
        ids = entry["source_event_ids"]
        assert ids, entry
        assert all(i in events for i in ids), (entry["key"], ids)
        assert {events[i]["session_id"] for i in ids} == {entry["source_session_id"]}
        assert entry["source_external_ids"] == [events[i]["external_id"] for i in ids]
        assert entry["status"] == "active" and entry["canonical_statement"].strip()
        assert entry["embedding_model"] == "hash-v1-384"
        assert len(entry["embedding"].to_list()) == 384
        assert entry["recorded_at"] == NOW

    for obs in rows(conn, "memory_observations", tenant):
        assert obs["source_event_ids"]
        assert {events[i]["session_id"] for i in obs["source_event_ids"]} == {obs["session_id"]}


def test_entries_built_from_events_sharing_memory_metadata_carry_it(conn: Conn) -> None:
    """Only when every source event carries the same object: a fact of the user's own turn
    gets that turn's, and the summary of turns that disagree gets none."""
    tenant = new_tenant()
    maya = [e for e in sample_events() if e["channel_id"] == "dm-maya"][:4]
    tagged = [
        {**e, "metadata": {MEMORY_METADATA: {"source": "crm" if i < 3 else "app"}}}
        for i, e in enumerate(maya)
    ]
    replay(conn, tenant, tagged, now=NOW)
    build_all(conn, tenant, hash_config())
    events = {e["id"]: e for e in rows(conn, "memory_session_events", tenant)}
    entries = rows(conn, "memory_entries", tenant)
    assert {e["kind"] for e in entries} >= {"session_summary", "constraint"}
    for entry in entries:
        sources = [events[i]["metadata"][MEMORY_METADATA] for i in entry["source_event_ids"]]
        given = {m["source"] for m in sources}
        expected = {"source": given.pop()} if len(given) == 1 else None
        assert entry["fields"].get("metadata") == expected, entry["key"]


def test_every_observation_links_to_its_entry_and_every_entry_has_one_add(conn: Conn) -> None:
    tenant = built_sample(conn)

    entries = {e["id"]: e for e in rows(conn, "memory_entries", tenant)}
    observations = rows(conn, "memory_observations", tenant)
    links = rows(conn, "memory_links", tenant)
    assert len(observations) == len(entries) == len(links)
    linked: Counter[int] = Counter()
    for obs in observations:
        mine = [link for link in links if link["src_id"] == obs["id"]]
        assert len(mine) == 1, obs
        link = mine[0]
        assert (link["src_type"], link["relation"], link["dst_type"]) == (
            "observation",
            "extracted_as",
            "entry",
        )
        entry = entries[int(link["dst_id"])]
        assert entry["source_session_id"] == obs["session_id"]
        same = ("owner_type", "owner_id", "key", "kind", "confidence", "fields")
        assert {k: entry[k] for k in same} == {k: obs[k] for k in same}
        assert entry["canonical_statement"] == obs["statement"]
        assert entry["source_event_ids"] == obs["source_event_ids"]
        linked[entry["id"]] += 1
    assert set(linked) == set(entries) and set(linked.values()) == {1}

    history = rows(conn, "memory_entry_history", tenant)
    assert Counter(h["entry_id"] for h in history) == Counter(dict.fromkeys(entries, 1))
    for h in history:
        assert (h["action"], h["actor"], h["at"]) == ("ADD", "builder", NOW)
        assert h["old_statement"] is None and h["old_status"] is None
        assert h["new_statement"] == entries[h["entry_id"]]["canonical_statement"]
        assert h["new_status"] == "active"


def test_a_day_counted_from_an_event_an_earlier_session_of_the_channel_dated(
    conn: Conn,
) -> None:
    """ "Two days before the wedding" counts from the day an earlier session of the same
    channel gave the wedding (built first), never from another channel's."""
    tenant = new_tenant()
    jan6 = datetime(2026, 1, 6, 7, 30, tzinfo=UTC)
    said = [
        says(1, "ok wedding news: its next month on the 14th!! so cheesy", jan6, "mere"),
        {**says(9, "my cousin's wedding is on march 3", jan6, "ana"), "channel_id": "dm-ana"},
        says(2, "the rehearsal dinner is 2 days before the wedding", jan6 + timedelta(days=14),
             "mere"),
        {**says(8, "we fly home the day after the wedding", jan6 + timedelta(days=14), "ana"),
         "channel_id": "dm-ana"},
    ]  # fmt: skip
    for event in said:  # each a session of its own
        replay(conn, tenant, [event], now=jan6 + timedelta(days=30))
    build_all(conn, tenant, hash_config())

    def statements(channel: str) -> str:
        found = rows(
            conn,
            "memory_entries",
            tenant,
            "fields->>'origin_session_id' IN ("
            "SELECT id::text FROM memory_sessions WHERE channel_id = %s)",
            channel,
        )
        return " ".join(r["canonical_statement"] for r in found)

    assert "12 February 2026" in statements("dm-mere")
    assert "4 March 2026" in statements("dm-ana")  # its own channel's wedding
    assert "15 February 2026" not in statements("dm-ana")


def test_a_relation_an_earlier_session_named_is_known_by_name_in_a_later_one(
    conn: Conn,
) -> None:
    """ "my wife rosa" in one session: "rosa" in the channel's next is the speaker's wife,
    and in another channel, or said by another member, nobody's."""
    tenant = new_tenant()
    jan6 = datetime(2026, 1, 6, 7, 30, tzinfo=UTC)
    later = jan6 + timedelta(days=14)
    said = [
        says(1, "my wife rosa is a nurse so her schedule is all over the place", jan6, "tom"),
        says(2, "rosa started a new job at st vincent's", later, "tom"),
        {**says(3, "rosa started a new job at st vincent's", later, "ana"), "channel_id": "dm-ana"},
    ]  # fmt: skip
    for event in said:  # each a session of its own
        replay(conn, tenant, [event], now=later + timedelta(days=1))
    build_all(conn, tenant, hash_config())
    found = rows(conn, "memory_entries", tenant, "key LIKE 'relationship:wife:%%'")
    assert {(r["owner_id"], r["key"]) for r in found} >= {("tom", "relationship:wife:employer")}
    assert all(r["owner_id"] == "tom" for r in found)


def test_a_session_waits_for_its_channels_earlier_session_queued_to_build(conn: Conn) -> None:
    tenant = new_tenant()
    at = NOW - timedelta(days=5)
    for n, day in enumerate((0, 1, 2)):  # three sessions of one channel
        replay(conn, tenant, [says(n, f"day {n} here", at + timedelta(days=day))], now=LATER)
    first, second, third = (s["id"] for s in list_sessions(conn, tenant))
    config = hash_config()
    # the second and third handed to the build queue, the first not: only the third waits
    conn.execute(
        "UPDATE memory_sessions SET build_queued_at = %s WHERE tenant_id = %s AND id = ANY(%s)",
        [LATER, tenant, [second, third]],
    )

    assert build_session(conn, tenant, third, config, now=LATER).status == "waiting"
    assert build_session(conn, tenant, second, config, now=LATER).status == "built"
    assert build_session(conn, tenant, third, config, now=LATER).status == "built"
    assert session_row(conn, tenant, first)["status"] == "closed"
    # out of order when asked (a worker that waited long enough)
    replay(conn, tenant, [says(9, "day 9 here", at + timedelta(days=3))], now=LATER)
    conn.execute(
        "UPDATE memory_sessions SET build_queued_at = %s, status = 'closed'"
        " WHERE tenant_id = %s AND id = %s",
        [LATER, tenant, third],
    )
    fourth = max(s["id"] for s in list_sessions(conn, tenant))
    assert build_session(conn, tenant, fourth, config, now=LATER).status == "waiting"
    out_of_order = build_session(conn, tenant, fourth, config, now=LATER, in_order=False)
    assert out_of_order.status == "built"


def test_built_session_records_version_and_gate_statistics(conn: Conn) -> None:
    tenant = new_tenant()
    ingest_sample(conn, tenant)
    config = hash_config()
    outcomes = build_all(conn, tenant, config)
    assert config.build_version == f"heuristic-{HeuristicExtractor.version}+hash-v1-384"
    for session_id, outcome in outcomes.items():
        s = session_row(conn, tenant, session_id)
        assert s["status"] == "built"
        assert s["build_version"] == config.build_version
        assert (s["built_at"], s["build_attempts"], s["next_attempt_at"]) == (NOW, 1, None)
        assert s["last_error"] is None
        stats = s["build_stats"]
        version = HeuristicExtractor.version
        assert (stats["extractor"], stats["extractor_version"]) == ("heuristic", version)
        assert set(stats["dropped"]) == set(GATES)
        assert stats["dropped"] == outcome.dropped
        n = len(rows(conn, "memory_entries", tenant, "source_session_id = %s", session_id))
        assert stats["items"] == outcome.entries == n > 0
        # every extracted item is either kept or counted under the gate that dropped it
        extracted = config.extractor.extract(load_session_input(conn, tenant, session_id))
        assert stats["items"] + sum(stats["dropped"].values()) == len(extracted.items)


def test_entries_are_dated_by_the_transcript_and_recorded_at_build_time(conn: Conn) -> None:
    tenant = new_tenant()
    sessions = {s["id"]: s for s in ingest_sample(conn, tenant)}
    build_time = datetime(2026, 6, 1, tzinfo=UTC)  # months after the conversations
    for session_id in sessions:
        build_session(conn, tenant, session_id, hash_config(), now=build_time)
    said = {e["id"]: e["occurred_at"] for e in rows(conn, "memory_session_events", tenant)}
    entries = list_entries(conn, tenant)
    for e in entries:  # valid time from the events, system time from the build
        assert e["valid_from"] <= max(said[i] for i in e["source_event_ids"]), e["key"]
        assert (e["recorded_at"], e["updated_at"]) == (build_time, build_time)
    assert [e["valid_from"] for e in entries] == sorted(e["valid_from"] for e in entries)
    summaries = [e for e in entries if e["kind"] == SESSION_SUMMARY]
    assert sorted(e["source_session_id"] for e in summaries) == sorted(sessions)
    for e in summaries:
        channel = sessions[e["source_session_id"]]["channel_id"]
        assert (e["owner_type"], e["owner_id"]) == ("channel", channel)


# ------------------------------------------------------------------------------ rebuilds


def test_rebuild_with_the_same_config_changes_no_row(conn: Conn) -> None:
    tenant = built_sample(conn)
    before = snapshot(conn, tenant)
    outcomes = {
        sid: build_session(conn, tenant, sid, hash_config(), now=LATER)
        for sid in (s["id"] for s in list_sessions(conn, tenant))
    }
    assert {o.status for o in outcomes.values()} == {"unchanged"}
    assert snapshot(conn, tenant) == before


OwnerKey = tuple[str, str, str]


def session_entries(conn: Conn, tenant: str, session_id: int) -> dict[OwnerKey, Row]:
    found = rows(conn, "memory_entries", tenant, "source_session_id = %s", session_id)
    return {(e["owner_type"], e["owner_id"], e["key"]): e for e in found}


def other_sessions_rows(conn: Conn, tenant: str, session_id: int) -> list[Any]:
    return [
        *rows(conn, "memory_observations", tenant, "session_id <> %s", session_id),
        *rows(conn, "memory_entries", tenant, "source_session_id <> %s", session_id),
    ]


def shortened(statement: str) -> str:
    """The statement without its last two words: still supported by its source event."""
    words = statement.rstrip(".").split()
    return " ".join(words[:-2]) + "."


def test_new_build_version_updates_entries_in_place_with_history(conn: Conn) -> None:
    tenant = built_sample(conn)
    session_id = list_sessions(conn, tenant)[0]["id"]  # Maya's first chat: several facts
    old_entries = session_entries(conn, tenant, session_id)
    facts = [k for k, e in old_entries.items() if e["kind"] in FACT_KINDS]
    assert len(facts) >= 3, facts
    changed, gone = facts[0], facts[1]

    def revise(item: Extracted) -> Extracted | None:
        key = (item.owner_type, item.owner_id, item.key)
        if key == gone:
            return None
        if key == changed:
            return dataclasses.replace(item, statement=shortened(item.statement))
        return item

    old_obs = {
        o["id"] for o in rows(conn, "memory_observations", tenant, "session_id = %s", session_id)
    }
    others_before = other_sessions_rows(conn, tenant, session_id)
    v2 = BuildConfig(Revised("next", revise), HashEmbedder())
    outcome = build_session(conn, tenant, session_id, v2, now=LATER)
    assert (outcome.status, outcome.entries) == ("built", len(old_entries) - 1), outcome

    new_entries = session_entries(conn, tenant, session_id)
    # No entry was duplicated: the same ids, updated in place (or marked deleted).
    assert {k: e["id"] for k, e in new_entries.items()} == {
        k: e["id"] for k, e in old_entries.items()
    }
    c = new_entries[changed]
    assert c["canonical_statement"] == shortened(old_entries[changed]["canonical_statement"])
    assert c["embedding"] != old_entries[changed]["embedding"]
    assert c["updated_at"] == LATER and c["status"] == "active"
    update = rows(
        conn, "memory_entry_history", tenant, "entry_id = %s AND action = 'UPDATE'", c["id"]
    )
    assert len(update) == 1
    assert update[0]["old_statement"] == old_entries[changed]["canonical_statement"]
    assert update[0]["new_statement"] == c["canonical_statement"]
    assert (update[0]["actor"], update[0]["at"]) == ("builder", LATER)
    assert history_actions(conn, tenant, c["id"]) == ["ADD", "UPDATE"]

    g = new_entries[gone]
    assert (g["status"], g["expired_at"]) == ("deleted", LATER)
    assert history_actions(conn, tenant, g["id"]) == ["ADD", "DELETE"]
    for key, e in new_entries.items():
        if key not in (changed, gone):  # same statement: no history row added
            assert e["canonical_statement"] == old_entries[key]["canonical_statement"]
            assert history_actions(conn, tenant, e["id"]) == ["ADD"]

    observations = rows(conn, "memory_observations", tenant, "session_id = %s", session_id)
    assert {o["build_version"] for o in observations} == {v2.build_version}
    assert not old_obs & {o["id"] for o in observations}
    assert sorted((o["owner_type"], o["owner_id"], o["key"]) for o in observations) == sorted(
        set(old_entries) - {gone}
    )
    s = session_row(conn, tenant, session_id)
    assert (s["status"], s["build_version"], s["built_at"]) == ("built", v2.build_version, LATER)
    assert s["build_stats"]["extractor_version"] == "next"
    assert other_sessions_rows(conn, tenant, session_id) == others_before


def test_a_rebuild_leaves_what_someone_edited_or_deleted_and_records_every_change(
    conn: Conn,
) -> None:
    tenant = built_sample(conn)
    session_id = list_sessions(conn, tenant)[0]["id"]
    old = session_entries(conn, tenant, session_id)
    deleted, edited, retuned, *_ = [k for k, e in old.items() if e["kind"] in FACT_KINDS]
    delete_entry(conn, tenant, old[deleted]["id"], actor="api:ops", now=NOW)
    edit_entry(conn, tenant, old[edited]["id"], "Edited by hand.", embedder=HashEmbedder(),
               actor="api:ops", now=NOW)  # fmt: skip

    def revise(item: Extracted) -> Extracted:  # the same statements; one confidence moves
        if (item.owner_type, item.owner_id, item.key) == retuned:
            return dataclasses.replace(item, confidence=round(item.confidence - 0.05, 2))
        return item

    v2 = BuildConfig(Revised("next", revise), HashEmbedder())
    assert build_session(conn, tenant, session_id, v2, now=LATER).status == "built"
    new = session_entries(conn, tenant, session_id)
    assert {k: e["id"] for k, e in new.items()} == {k: e["id"] for k, e in old.items()}
    assert new[deleted]["status"] == "deleted"  # not revived, not added again
    assert new[edited]["canonical_statement"] == "Edited by hand."  # not rewritten
    assert history_actions(conn, tenant, old[deleted]["id"]) == ["ADD", "DELETE"]
    assert history_actions(conn, tenant, old[edited]["id"]) == ["ADD", "UPDATE"]
    # a change that keeps the statement is a change: its history row lets the read
    # models and supersede see it
    assert new[retuned]["confidence"] != old[retuned]["confidence"]
    assert history_actions(conn, tenant, old[retuned]["id"]) == ["ADD", "UPDATE"]
    for key in set(old) - {deleted, edited, retuned}:
        assert new[key]["updated_at"] == old[key]["updated_at"]  # untouched
        assert history_actions(conn, tenant, old[key]["id"]) == ["ADD"]


def test_a_rebuild_keeps_the_provenance_an_entry_absorbed_from_other_sessions(
    conn: Conn,
) -> None:
    tenant = built_sample(conn)
    first, second = (s["id"] for s in list_sessions(conn, tenant)[:2])
    survivor = next(iter(session_entries(conn, tenant, first).values()))
    other = rows(conn, "memory_session_events", tenant, "session_id = %s", second)[0]
    own = (list(survivor["source_event_ids"]), list(survivor["source_external_ids"]))
    conn.execute(  # as a merge leaves a survivor: its duplicate's provenance added
        "UPDATE memory_entries SET source_event_ids = source_event_ids || %s::bigint,"
        " source_external_ids = source_external_ids || %s::text WHERE id = %s",
        [other["id"], other["external_id"], survivor["id"]],
    )
    v2 = BuildConfig(Revised("next"), HashEmbedder())
    assert build_session(conn, tenant, first, v2, now=LATER).status == "built"
    [after] = rows(conn, "memory_entries", tenant, "id = %s", survivor["id"])
    assert list(after["source_event_ids"]) == [*own[0], other["id"]]
    assert list(after["source_external_ids"]) == [*own[1], other["external_id"]]
    assert history_actions(conn, tenant, survivor["id"]) == ["ADD"]  # nothing changed


def test_a_rebuild_may_move_a_superseded_fact_past_its_successor(conn: Conn) -> None:
    tenant = built_sample(conn)
    session_id = list_sessions(conn, tenant)[0]["id"]
    entry = next(e for e in session_entries(conn, tenant, session_id).values()
                 if e["kind"] in FACT_KINDS)  # fmt: skip
    ended = entry["valid_from"] + timedelta(hours=1)
    conn.execute(  # as supersede leaves a fact a later one replaced
        "UPDATE memory_entries SET status = 'superseded', valid_to = %s WHERE id = %s",
        [ended, entry["id"]],
    )
    later_start = ended + timedelta(days=1)
    key = (entry["owner_type"], entry["owner_id"], entry["key"])

    def revise(item: Extracted) -> Extracted:
        if (item.owner_type, item.owner_id, item.key) == key:
            return dataclasses.replace(item, valid_from=later_start)
        return item

    v2 = BuildConfig(Revised("next", revise), HashEmbedder())
    assert build_session(conn, tenant, session_id, v2, now=LATER).status == "built"
    [moved] = rows(conn, "memory_entries", tenant, "id = %s", entry["id"])
    assert moved["valid_from"] == moved["valid_to"] == later_start


def _displace(conn: Conn, tenant: str, entry: Row, by: Row, how: str, was: str) -> None:
    """As merge (``how`` = merged) or supersede (superseded) leave ``entry`` displaced by
    ``by``: its status, its lineage link and its history row (from status ``was``)."""
    ids = {"t": NOW, "e": entry["id"], "by": by["id"], "tenant": tenant, "how": how, "was": was}
    statements = [
        "UPDATE memory_entries SET status = %(how)s, expired_at = %(t)s WHERE id = %(e)s",
        "INSERT INTO memory_entry_history (tenant_id, entry_id, action, old_status, new_status,"
        " actor, at) VALUES (%(tenant)s, %(e)s, upper(left(%(how)s, -1)), %(was)s, %(how)s,"
        " 'consolidation:job', %(t)s)",
    ]
    if how == "merged":
        statements.append(
            "INSERT INTO memory_links (tenant_id, src_type, src_id, relation, dst_type, dst_id,"
            " created_at) VALUES (%(tenant)s, 'entry', %(e)s, 'merged_into', 'entry',"
            " %(by)s::text, %(t)s)"
        )
    else:
        statements += [
            "UPDATE memory_entries SET superseded_by = %(by)s, valid_to = valid_from"
            " WHERE id = %(e)s",
            "INSERT INTO memory_links (tenant_id, src_type, src_id, relation, dst_type, dst_id,"
            " created_at) VALUES (%(tenant)s, 'entry', %(by)s, 'supersedes', 'entry',"
            " %(e)s::text, %(t)s)",
        ]
    for statement in statements:
        conn.execute(statement, ids)


def test_a_rebuild_that_deletes_an_entry_revives_those_it_absorbed_or_superseded(
    conn: Conn,
) -> None:
    tenant = built_sample(conn)
    first, second = (s["id"] for s in list_sessions(conn, tenant)[:2])
    survivor = next(e for e in session_entries(conn, tenant, first).values()
                    if e["kind"] in FACT_KINDS)  # fmt: skip
    absorbed, superseded, edited = list(session_entries(conn, tenant, second).values())[:3]
    _displace(conn, tenant, absorbed, survivor, "merged", "active")
    _displace(conn, tenant, superseded, survivor, "superseded", "archived")  # decayed first
    edit_entry(conn, tenant, edited["id"], "Edited by hand.", embedder=HashEmbedder(),
               actor="api:ops", now=NOW)  # fmt: skip
    _displace(conn, tenant, edited, survivor, "merged", "active")
    gone = (survivor["owner_type"], survivor["owner_id"], survivor["key"])
    rechecked: list[list[tuple[str, str, str]]] = []

    def revise(item: Extracted) -> Extracted | None:
        return None if (item.owner_type, item.owner_id, item.key) == gone else item

    def after_store(conn: Conn, tenant: str, keys: list[Any], *, now: datetime) -> None:
        rechecked.append(keys)

    v2 = BuildConfig(Revised("next", revise), HashEmbedder(), after_store=after_store)
    assert build_session(conn, tenant, first, v2, now=LATER).status == "built"
    after = {e["id"]: e for e in rows(conn, "memory_entries", tenant)}
    assert after[survivor["id"]]["status"] == "deleted"
    for entry, was in ((absorbed, "active"), (superseded, "archived"), (edited, "active")):
        revived = after[entry["id"]]
        assert (revived["status"], revived["superseded_by"], revived["valid_to"]) == (
            was, None, entry["valid_to"]  # None: the supersession's end undone
        )  # fmt: skip
        assert (revived["expired_at"] is None) == (was == "active")
        assert revived["updated_at"] == LATER
        [*_, change] = rows(conn, "memory_entry_history", tenant, "entry_id = %s", entry["id"])
        assert (change["action"], change["old_status"], change["new_status"]) == (
            "UPDATE", "superseded" if entry is superseded else "merged", was
        )  # fmt: skip
        assert change["actor"] == "builder"
        assert f"entry {survivor['id']}" in change["reason"]
        # supersede at build time weighs the revived too
        assert (entry["owner_type"], entry["owner_id"], entry["key"]) in rechecked[0]
    # someone's edit comes back as they left it, not hidden behind a deleted entry
    assert after[edited["id"]]["canonical_statement"] == "Edited by hand."
    assert rows(conn, "memory_links", tenant, "relation IN ('merged_into', 'supersedes')") == []


def test_after_a_new_build_version_entry_lineage_names_only_existing_observations(
    conn: Conn,
) -> None:
    tenant = built_sample(conn)
    build_all(conn, tenant, BuildConfig(Revised("next"), HashEmbedder()))

    observations = {o["id"]: o for o in rows(conn, "memory_observations", tenant)}
    entries = {e["id"]: e for e in rows(conn, "memory_entries", tenant)}
    links = rows(conn, "memory_links", tenant, "relation = 'extracted_as'")
    dangling = [link for link in links if link["src_id"] not in observations]
    assert dangling == [], f"{len(dangling)} of {len(links)} links name deleted observations"
    per_entry = Counter(int(link["dst_id"]) for link in links)
    assert per_entry == Counter(dict.fromkeys(entries, 1))


def test_new_build_version_with_the_same_statements_adds_no_history_rows(conn: Conn) -> None:
    tenant = built_sample(conn)
    entries_before = rows(conn, "memory_entries", tenant)
    history_before = rows(conn, "memory_entry_history", tenant)
    outcomes = build_all(conn, tenant, BuildConfig(Revised("next"), HashEmbedder()))
    assert {o.status for o in outcomes.values()} == {"built"}
    entries_after = rows(conn, "memory_entries", tenant)
    assert [(e["id"], e["canonical_statement"]) for e in entries_after] == [
        (e["id"], e["canonical_statement"]) for e in entries_before
    ]
    assert rows(conn, "memory_entry_history", tenant) == history_before
    assert {s["build_attempts"] for s in list_sessions(conn, tenant)} == {2}


# ------------------------------------------------------------------------------ refusals


def test_building_an_open_session_raises_and_writes_nothing(conn: Conn) -> None:
    tenant = new_tenant()
    sessions = ingest_sample(conn, tenant, close=False)
    open_ids = [s["id"] for s in sessions if s["status"] == "open"]
    assert len(open_ids) == 2  # the last session of each channel
    before = snapshot(conn, tenant)
    with pytest.raises(SessionNotClosed) as info:
        build_session(conn, tenant, open_ids[0], hash_config(), now=NOW)
    assert str(open_ids[0]) in str(info.value)
    assert snapshot(conn, tenant) == before


def test_building_an_unknown_session_raises_session_not_found(conn: Conn) -> None:
    tenant = new_tenant()
    ingest_sample(conn, tenant)
    with pytest.raises(SessionNotFound):
        build_session(conn, tenant, 10**12, hash_config(), now=NOW)


def test_session_locked_by_another_builder_is_busy(fresh_db_url: str) -> None:
    tenant = new_tenant()
    with connect(fresh_db_url, autocommit=True) as a, connect(fresh_db_url) as b:
        session_id = ingest_sample(a, tenant)[0]["id"]
        b.execute(
            "SELECT id FROM memory_sessions WHERE tenant_id = %s AND id = %s FOR UPDATE",
            [tenant, session_id],
        )
        outcome = build_session(a, tenant, session_id, hash_config(), now=NOW)
        assert outcome == BuildOutcome("busy", session_id)
        assert session_row(a, tenant, session_id)["status"] == "closed"
        assert rows(a, "memory_observations", tenant) == []
        b.rollback()  # the other builder lets go
        assert build_session(a, tenant, session_id, hash_config(), now=NOW).status == "built"
    with connect(fresh_db_url) as c:
        assert session_row(c, tenant, session_id)["status"] == "built"


class Waiting:
    """The heuristic extractor, which first waits for ``go`` (an LLM call taking its time)."""

    name, version = "heuristic", HeuristicExtractor.version

    def __init__(self) -> None:
        self.inner = HeuristicExtractor()
        self.started, self.go = threading.Event(), threading.Event()

    def extract(self, session: SessionInput) -> Extraction:
        self.started.set()
        assert self.go.wait(30)
        return self.inner.extract(session)


def test_a_build_holds_no_transaction_or_lock_while_it_extracts(fresh_db_url: str) -> None:
    tenant = new_tenant()
    slow = Waiting()
    with (
        connect(fresh_db_url, autocommit=True) as a,
        connect(fresh_db_url, autocommit=True) as b,
        ThreadPoolExecutor(1) as pool,
    ):
        session_id = ingest_sample(a, tenant)[0]["id"]
        config = dataclasses.replace(hash_config(), extractor=slow)
        build = pool.submit(build_session, a, tenant, session_id, config, now=NOW)
        assert slow.started.wait(30)
        state = b.execute(
            "SELECT state FROM pg_stat_activity WHERE pid = %s", [a.info.backend_pid]
        ).fetchone()
        assert state == {"state": "idle"}  # not "idle in transaction"
        with b.transaction():  # the session's row is free
            b.execute(
                "SELECT id FROM memory_sessions WHERE tenant_id = %s AND id = %s FOR UPDATE NOWAIT",
                [tenant, session_id],
            )
        # a second builder of the same session is kept out
        assert build_session(b, tenant, session_id, hash_config(), now=NOW).status == "busy"
        slow.go.set()
        assert build.result(timeout=30).status == "built"
        # and once the build is done, the session is free to build again (nothing to do)
        assert build_session(b, tenant, session_id, hash_config(), now=NOW).status == "unchanged"


def test_concurrent_changes_of_an_entry_each_see_the_one_before(fresh_db_url: str) -> None:
    tenant = new_tenant()
    with connect(fresh_db_url, autocommit=True) as a, connect(fresh_db_url) as b:
        ingest_sample(a, tenant)
        build_all(a, tenant, hash_config())
        entry_id = rows(a, "memory_entries", tenant)[0]["id"]
        a_pid, b_pid = a.info.backend_pid, b.info.backend_pid
        b.execute("SELECT 1")  # b's changes wait in its open transaction, locks held
        edit_entry(b, tenant, entry_id, "Edited first.", embedder=HashEmbedder(),
                   actor="api:b", now=NOW)  # fmt: skip
        with ThreadPoolExecutor(2) as pool:  # b holds the entry: both wait for it
            edit = pool.submit(edit_entry, a, tenant, entry_id, "Edited second.",
                               embedder=HashEmbedder(), actor="api:a", now=NOW)  # fmt: skip
            wait_until_blocked(fresh_db_url, a_pid, by=b_pid)
            assert not edit.done()
            b.commit()
            edit.result(timeout=10)
            b.execute("SELECT 1")
            delete_entry(b, tenant, entry_id, actor="api:b", now=NOW)
            again = pool.submit(delete_entry, a, tenant, entry_id, actor="api:a", now=NOW)
            wait_until_blocked(fresh_db_url, a_pid, by=b_pid)
            assert not again.done()
            b.commit()
            again.result(timeout=10)
        changes = [
            (h["action"], h["old_statement"], h["new_statement"], h["old_status"])
            for h in entry_history(a, tenant, entry_id)[1:]
        ]
        assert changes[0][2:] == ("Edited first.", "active")
        assert changes[1:] == [
            ("UPDATE", "Edited first.", "Edited second.", "active"),
            ("DELETE", "Edited second.", None, "active"),
        ]  # one delete: the second found it deleted


def test_relative_dates_resolve_on_the_speakers_local_day(conn: Conn) -> None:
    tenant = new_tenant()
    said = {
        "external_id": "a1",
        "channel_id": "c",
        "role": "user",
        "actor_id": "ana",
        "actor_name": "Ana",
        "content": "I went to a pottery workshop yesterday.",
        "occurred_at": "2025-09-08T21:30:00-07:00",
    }  # fmt: skip (8 Sep local, 9 Sep UTC)
    replay(conn, tenant, [said], now=NOW)
    [session] = list_sessions(conn, tenant)
    build_session(conn, tenant, session["id"], hash_config(), now=NOW)
    statements = {e["kind"]: e["canonical_statement"] for e in rows(conn, "memory_entries", tenant)}
    assert "7 September 2025" in statements["event"], statements
    assert "8 September 2025" in statements["session_summary"], statements
    [stored] = rows(conn, "memory_session_events", tenant)
    assert stored["occurred_at"] == datetime(2025, 9, 9, 4, 30, tzinfo=UTC)  # the instant
    assert stored["utc_offset_minutes"] == -7 * 60


def test_an_edit_embeds_the_entry_as_the_builder_did(conn: Conn) -> None:
    tenant = built_sample(conn)
    for entry in rows(conn, "memory_entries", tenant)[:5]:  # the same statement again
        edited = edit_entry(conn, tenant, entry["id"], entry["canonical_statement"],
                            embedder=HashEmbedder(), actor="api:ops", now=NOW)  # fmt: skip
        assert edited["embedding"] == entry["embedding"], entry["canonical_statement"]


def test_an_edited_statement_is_the_facts_value_not_what_was_read_from_the_old_one(
    conn: Conn,
) -> None:
    """The profile (and supersede) take a fact's value from its object: an edit that left
    the old object showed "peanut" beside a statement about shellfish."""
    tenant = built_sample(conn)
    [entry] = rows(conn, "memory_entries", tenant, "key LIKE 'constraint:allergy:%%'")
    assert entry["fields"]["object"]
    statement = "Maya Chen is allergic to shellfish."
    edit_entry(conn, tenant, entry["id"], statement, embedder=HashEmbedder(), actor="api:ops",
               now=NOW, fields={"note": "checked"})  # fmt: skip
    project(conn, tenant, now=NOW)
    [row] = [r for r in get_profile(conn, tenant, "maya") if r.key == entry["key"]]
    assert (row.value, row.statement) == (statement, statement)
    [edited] = rows(conn, "memory_entries", tenant, "id = %s", entry["id"])
    assert "object" not in edited["fields"] and edited["fields"]["note"] == "checked"


def test_deleting_a_users_memory_takes_everything_built_from_their_words(conn: Conn) -> None:
    tenant = built_sample(conn)

    def built_from_maya() -> list[Row]:  # active entries with a source event maya wrote
        return conn.execute(
            "SELECT e.id, e.owner_type, e.owner_id FROM memory_entries e"
            " WHERE e.tenant_id = %(t)s AND e.status = 'active' AND EXISTS ("
            "   SELECT 1 FROM memory_session_events ev WHERE ev.tenant_id = %(t)s"
            "      AND ev.id = ANY (e.source_event_ids) AND ev.actor_id = 'maya')",
            {"t": tenant},
        ).fetchall()

    every = rows(conn, "memory_entries", tenant)
    assert all(e["fields"]["origin_session_id"] == e["source_session_id"] for e in every)
    before = built_from_maya()
    assert {r["owner_id"] for r in before} - {"maya"}, "others' entries quote maya"
    delete_owner_entries(conn, tenant, "user", "maya", actor="api:ops", now=NOW)
    assert built_from_maya() == []
    assert rows(conn, "memory_entries", tenant, "status = 'active'"), "others' own memory stays"


# ------------------------------------------------------------------------------ failures


def test_extractor_failure_writes_nothing_and_is_recorded_with_backoff(conn: Conn) -> None:
    tenant = new_tenant()
    session_id = ingest_sample(conn, tenant)[0]["id"]
    before = snapshot(conn, tenant)
    failing = BuildConfig(FailingExtractor(), HashEmbedder())
    with pytest.raises(RuntimeError, match="extractor crashed") as info:
        build_session(conn, tenant, session_id, failing, now=NOW)
    assert snapshot(conn, tenant) == before
    # The connection is usable and back to its own role after the failed build.
    assert conn.execute("SELECT current_user = session_user AS same").fetchone() == {"same": True}

    reason = f"{type(info.value).__name__}: {info.value}"
    assert record_failure(conn, tenant, session_id, reason, now=NOW, backoff=BACKOFF) == 1
    s = session_row(conn, tenant, session_id)
    assert (s["status"], s["build_attempts"], s["last_error"]) == ("failed", 1, reason)
    first_wait = s["next_attempt_at"] - NOW
    assert first_wait >= BACKOFF

    later = NOW + first_wait
    assert record_failure(conn, tenant, session_id, reason, now=later, backoff=BACKOFF) == 2
    s = session_row(conn, tenant, session_id)
    assert (s["status"], s["build_attempts"]) == ("failed", 2)
    assert s["next_attempt_at"] - later == 2 * first_wait  # exponential backoff
    assert rows(conn, "memory_observations", tenant) == []
    assert rows(conn, "memory_entries", tenant) == []
    # after very many attempts (retried by hand), the wait stops growing at a century
    conn.execute("UPDATE memory_sessions SET build_attempts = 200 WHERE id = %s", [session_id])
    assert record_failure(conn, tenant, session_id, reason, now=later, backoff=BACKOFF) == 201
    assert session_row(conn, tenant, session_id)["next_attempt_at"] - later <= timedelta(days=36525)


def test_failure_after_rows_were_written_rolls_the_whole_session_back(conn: Conn) -> None:
    tenant = new_tenant()
    session_id = ingest_sample(conn, tenant)[0]["id"]
    build_session(conn, tenant, session_id, hash_config(), now=NOW)
    before = snapshot(conn, tenant)
    broken = BuildConfig(Revised("next", lambda i: i), NaNEmbedder())
    with pytest.raises(psycopg.errors.DataException, match="NaN"):
        build_session(conn, tenant, session_id, broken, now=LATER)
    assert snapshot(conn, tenant) == before  # v1 observations and entries intact


def test_failed_session_builds_later_and_clears_its_error(conn: Conn) -> None:
    tenant = new_tenant()
    session_id = ingest_sample(conn, tenant)[0]["id"]
    record_failure(conn, tenant, session_id, "RuntimeError: boom", now=NOW, backoff=BACKOFF)
    outcome = build_session(conn, tenant, session_id, hash_config(), now=LATER)
    assert outcome.status == "built"
    s = session_row(conn, tenant, session_id)
    assert (s["status"], s["last_error"], s["next_attempt_at"]) == ("built", None, None)
    assert s["build_attempts"] == 2  # one failed attempt and the successful one


def test_record_failure_does_not_undo_a_build(conn: Conn) -> None:
    tenant = new_tenant()
    session_id = ingest_sample(conn, tenant)[0]["id"]
    build_session(conn, tenant, session_id, hash_config(), now=NOW)
    before = snapshot(conn, tenant)
    assert record_failure(conn, tenant, session_id, "late", now=NOW, backoff=BACKOFF) is None
    assert snapshot(conn, tenant) == before


def test_sessions_to_build_lists_closed_and_retry_due_failed_sessions(conn: Conn) -> None:
    tenant = new_tenant()
    sessions = ingest_sample(conn, tenant, close=False)
    closed = [s["id"] for s in sessions if s["status"] == "closed"]
    still_open = [s["id"] for s in sessions if s["status"] == "open"]
    assert len(closed) == 3 and len(still_open) == 2
    built, due, not_due = closed
    build_session(conn, tenant, built, hash_config(), now=NOW)
    record_failure(conn, tenant, due, "x", now=NOW - timedelta(hours=1), backoff=BACKOFF)
    record_failure(conn, tenant, not_due, "x", now=NOW, backoff=BACKOFF)
    waiting = waiting_builds(conn)
    sweep_idle(conn, now=LATER, tenant_id=tenant)  # both open sessions close
    assert waiting_builds(conn) == waiting + 2

    def listed(now: datetime, **kw: Any) -> list[int]:
        return [sid for t, sid in sessions_to_build(conn, now=now, **kw) if t == tenant]

    assert listed(NOW) == sorted([due, *still_open])
    assert listed(NOW + BACKOFF) == sorted([due, not_due, *still_open])
    assert listed(NOW + BACKOFF, max_attempts=1) == sorted(still_open)


# ------------------------------------------------------------------------------ tenants


def test_building_one_tenant_writes_only_that_tenants_rows(conn: Conn) -> None:
    a, b = new_tenant(), new_tenant()
    ingest_sample(conn, a)
    b_sessions = ingest_sample(conn, b)  # same external ids, another tenant
    b_before = snapshot(conn, b)
    outcomes = build_all(conn, a, hash_config())
    assert {o.status for o in outcomes.values()} == {"built"}
    assert snapshot(conn, b) == b_before
    assert {s["status"] for s in list_sessions(conn, b)} == {"closed"}
    for table in TABLES[1:]:
        written = conn.execute(
            sql.SQL("SELECT DISTINCT tenant_id FROM {} WHERE tenant_id IN (%s, %s)").format(
                sql.Identifier(table)
            ),
            [a, b],
        ).fetchall()
        assert [r["tenant_id"] for r in written] == [a], table
    a_events = {e["id"] for e in rows(conn, "memory_session_events", a)}
    for e in rows(conn, "memory_entries", a):
        assert set(e["source_event_ids"]) <= a_events
    # Tenant B cannot build (or even see) tenant A's session, nor A build B's.
    with pytest.raises(SessionNotFound):
        build_session(conn, b, next(iter(outcomes)), hash_config(), now=NOW)
    with pytest.raises(SessionNotFound):
        build_session(conn, a, b_sessions[0]["id"], hash_config(), now=NOW)
    assert snapshot(conn, b) == b_before
    assert list_entries(conn, b) == []


# ------------------------------------------------------------------------------ group chats


def test_group_chat_where_two_users_share_a_fact_key_builds_one_entry_each(conn: Conn) -> None:
    tenant = new_tenant()
    t0 = datetime(2025, 3, 1, 10, tzinfo=UTC)
    said = [
        ("caroline", "Caroline", "user", "I love hiking in the mountains."),
        ("melanie", "Melanie", "user", "I love hiking in the mountains too."),
        ("bot", "Bot", "assistant", "Nice, enjoy your hikes!"),
    ]
    events = [
        {
            "external_id": f"g{i}",
            "channel_id": "group",
            "role": role,
            "actor_id": actor,
            "actor_name": name,
            "content": content,
            "occurred_at": t0 + timedelta(minutes=i),
        }
        for i, (actor, name, role, content) in enumerate(said)
    ]
    replay(conn, tenant, events, now=NOW)
    session_id = list_sessions(conn, tenant)[0]["id"]
    assert build_session(conn, tenant, session_id, hash_config(), now=NOW).status == "built"
    hiking = [e for e in list_entries(conn, tenant) if e["key"] == "preference:hiking"]
    assert sorted(e["owner_id"] for e in hiking) == ["caroline", "melanie"]


# ------------------------------------------------------------------------------ real model


def test_build_with_the_local_model_stores_searchable_384_d_vectors(conn: Conn) -> None:
    tenant = new_tenant()
    session_id = ingest_sample(conn, tenant)[0]["id"]
    embedder = make_embedder("local")
    config = BuildConfig(HeuristicExtractor(), embedder)
    assert build_session(conn, tenant, session_id, config, now=NOW).status == "built"
    entries = rows(conn, "memory_entries", tenant)
    assert entries and {e["embedding_model"] for e in entries} == {"all-MiniLM-L6-v2-int8"}
    for e in entries:
        vector = np.asarray(e["embedding"].to_list())
        assert vector.shape == (384,)
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3
    question = contextualize(
        "Which foods must Maya avoid because of an allergy?",
        owner="Maya Chen",
        when=None,
        kind=None,
        topic=None,
    )
    query = embedder.embed([question])[0]
    top = conn.execute(
        "SELECT source_external_ids FROM memory_entries"
        " WHERE tenant_id = %s AND embedding_model = 'all-MiniLM-L6-v2-int8'"
        " ORDER BY embedding::halfvec(384) <=> %s::halfvec(384) LIMIT 1",
        [tenant, query],
    ).fetchone()
    assert top is not None and "dm-maya-003" in top["source_external_ids"]


def test_a_q8row_build_embeds_each_entry_with_its_owner_and_topic_alone(conn: Conn) -> None:
    tenant = new_tenant()
    session_id = ingest_sample(conn, tenant)[0]["id"]
    embedder = make_embedder("local", model=ROWS_MODEL_NAME)
    config = BuildConfig(HeuristicExtractor(), embedder)
    assert build_session(conn, tenant, session_id, config, now=NOW).status == "built"
    entries = rows(conn, "memory_entries", tenant)
    assert {e["embedding_model"] for e in entries} == {ROWS_MODEL_NAME}
    stored = np.array([e["embedding"].to_list() for e in entries])
    own = embedder.embed([stored_entry_text(e, ROWS_MODEL_NAME) for e in entries])
    dated = embedder.embed([stored_entry_text(e, QUANTIZED_MODEL_NAME) for e in entries])
    assert "[date: " in stored_entry_text(entries[0], QUANTIZED_MODEL_NAME)
    np.testing.assert_allclose(stored, own, atol=2e-3)  # halfvec's precision
    assert np.abs(stored - dated).max() > 2e-2
