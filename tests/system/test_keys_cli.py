"""``memledger keys`` against a real database: the tenant can follow the command name."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from click.testing import CliRunner

from ledger.db import connect
from ops.api.keys import resolve_key
from ops.cli import cli
from ops.samples import sample_path
from ops.services import redacted


def cli_env(db_url: str, redis_url: str, home: Path, **settings: str) -> dict[str, str]:
    """The CLI's environment on the test's database and Redis, with more ``MEMLEDGER_*``."""
    env = {"DATABASE_URL": db_url, "REDIS_URL": redis_url, "HOME": str(home), **settings}
    return {f"MEMLEDGER_{name}": value for name, value in env.items()}


def test_keys_take_the_tenant_after_the_command_name_too(
    fresh_db_url: str, redis_url: str, tmp_path: Path
) -> None:
    runner = CliRunner(env=cli_env(fresh_db_url, redis_url, tmp_path, TENANT="default"))

    made = runner.invoke(cli, ["keys", "create", "--tenant", "acme", "--name", "backend"])
    assert made.exit_code == 0, made.output
    assert "for tenant 'acme'" in made.output
    key = made.output.strip().splitlines()[-1]
    with connect(fresh_db_url, autocommit=True) as conn:
        owner = resolve_key(conn, key)
    assert owner is not None and owner.tenant_id == "acme"

    assert "backend" in runner.invoke(cli, ["keys", "list", "--tenant", "acme"]).output
    assert "backend" not in runner.invoke(cli, ["keys", "list"]).output  # tenant 'default'
    after_wins = runner.invoke(cli, ["--tenant", "acme", "keys", "list", "--tenant", "beta"])
    assert after_wins.exit_code == 0 and "backend" not in after_wins.output

    key_id = made.output.split()[1]
    revoked = runner.invoke(cli, ["keys", "revoke", key_id, "--tenant", "acme"])
    assert revoked.exit_code == 0, revoked.output
    with connect(fresh_db_url, autocommit=True) as conn:
        assert resolve_key(conn, key) is None


def test_ingest_reads_a_pipe_and_urls_are_printed_without_password(
    fresh_db_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = cli_env(fresh_db_url, redis_url, tmp_path, EMBEDDER="hash")
    fifo = tmp_path / "events"
    os.mkfifo(fifo)  # read once, like `memledger ingest <(...)` or /dev/stdin
    lines = sample_path().read_text()
    writer = threading.Thread(target=fifo.write_text, args=(lines,))
    writer.start()
    out = CliRunner(env=env).invoke(cli, ["--tenant", "pipe", "ingest", str(fifo)])
    writer.join()
    assert out.exit_code == 0, out.output
    assert f"accepted {len(lines.splitlines())}," in out.output
    assert redacted("postgresql://memledger:s3cret@db/x") == "postgresql://memledger:***@db/x"
    assert "password=***" in redacted("user=u password=s3cret host=h")


def test_ingest_close_closes_a_whole_transcript_and_waits_while_a_line_is_bad(
    fresh_db_url: str, redis_url: str, tmp_path: Path
) -> None:
    runner = CliRunner(env=cli_env(fresh_db_url, redis_url, tmp_path, EMBEDDER="hash"))
    lines = sample_path().read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:-3], "{not json", *lines[-2:]]) + "\n")
    ingest = ["--tenant", "whole", "ingest", "--close", "--batch-size", "5"]
    out = runner.invoke(cli, [*ingest, str(broken)])
    assert out.exit_code == 1 and "not JSON" in out.output, out.output
    assert _statuses(fresh_db_url, "whole").count("open") == 2  # the end is still to come

    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text("\n".join(lines) + "\n")
    out = runner.invoke(cli, [*ingest, str(fixed)])
    assert out.exit_code == 0, out.output
    # as `memledger run` leaves the sample: each chat's last session closed at its end
    assert sorted(_statuses(fresh_db_url, "whole")) == ["explicit"] * 2 + ["gap"] * 3


def _statuses(db_url: str, tenant: str) -> list[str]:
    """Each session's close reason ("open" while open), in id order."""
    with connect(db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT coalesce(close_reason, status) AS s FROM memory_sessions"
            " WHERE tenant_id = %s ORDER BY id",
            [tenant],
        ).fetchall()
    return [r["s"] for r in rows]


def test_a_review_takes_exactly_one_decision() -> None:
    runner = CliRunner()
    for flags in (["--publish", "--reject"], []):
        out = runner.invoke(cli, ["skills", "review", "1", *flags, "--reviewer", "lead"])
        assert out.exit_code == 2 and "--publish or --reject" in out.output, out.output


def test_search_refuses_a_kind_that_does_not_exist() -> None:
    """Before any service starts: an unknown kind would match nothing, silently."""
    out = CliRunner().invoke(cli, ["search", "x", "--kind", "Preference"])
    assert out.exit_code == 2 and "'Preference' is not one of" in out.output, out.output
