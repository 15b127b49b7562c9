"""The read-model runner never skips an entry change that commits late.

Writer A announces entry changes and writes a history row but has not committed; writer B
writes a later history row and commits. A runner that took ``max(id)`` as it stood would
process B's id, advance its checkpoint past A's id and never see A's change. With the
horizon lock, the runner waits for A, and both changes land in the profile.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from psycopg.types.json import Jsonb

from ledger.db import Conn, connect
from materializers import announce_entry_changes, checkpoint, get_profile, project

TENANT = "horizon"
NOW = datetime(2025, 10, 7, tzinfo=UTC)
DEADLINE_S = 30.0


def write_fact(conn: Conn, key: str, value: str) -> int:
    """An entry and its ADD history row, announced; returns the history id."""
    announce_entry_changes(conn)
    entry = conn.execute(
        "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
        " canonical_statement, fields, confidence, importance, valid_from, recorded_at,"
        " source_event_ids, updated_at)"
        " VALUES (%s, 'user', 'maya', 'preference', %s, %s, %s, 0.8, 0.5, %s, %s, '{1}', %s)"
        " RETURNING id",
        [TENANT, key, f"Maya likes {value}.", Jsonb({"object": value}), NOW, NOW, NOW],
    ).fetchone()
    assert entry is not None
    history = conn.execute(
        "INSERT INTO memory_entry_history (tenant_id, entry_id, action, new_status, actor, at)"
        " VALUES (%s, %s, 'ADD', 'active', 'test', %s) RETURNING id",
        [TENANT, entry["id"], NOW],
    ).fetchone()
    assert history is not None
    return int(history["id"])


def wait_for_advisory_waiter(conn: Conn) -> None:
    """Poll until some session waits for an advisory lock (the runner's horizon step)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
        if row and row["n"]:
            return
        time.sleep(0.02)
    raise AssertionError("the runner never waited for the horizon lock")


def test_runner_waits_for_a_writer_in_flight_and_skips_no_change(fresh_db_url: str) -> None:
    with (
        connect(fresh_db_url) as late,
        connect(fresh_db_url, autocommit=True) as early,
        connect(fresh_db_url, autocommit=True) as runner,
        connect(fresh_db_url, autocommit=True) as observer,
    ):
        late_id = write_fact(late, "preference:drink", "tea")  # not committed yet
        with early.transaction():
            early_id = write_fact(early, "preference:music", "jazz")
        assert early_id > late_id

        result: dict[str, object] = {}
        thread = threading.Thread(
            target=lambda: result.update(stats=project(runner, TENANT, now=NOW)), daemon=True
        )
        thread.start()
        wait_for_advisory_waiter(observer)
        assert thread.is_alive()
        late.commit()
        thread.join(DEADLINE_S)
        assert not thread.is_alive()

        assert checkpoint(observer, TENANT) == early_id
        keys = {row.key: row.value for row in get_profile(observer, TENANT, "maya")}
        assert keys == {"preference:drink": "tea", "preference:music": "jazz"}
