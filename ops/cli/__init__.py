"""``memledger``: the command line for every stage. The root group is here; each command
family is a module of this package, added to the root explicitly."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click
import psycopg
import redis

from ledger.errors import MemledgerError
from ops.cli import api, bench, consolidation, eval, ledger, readmodels, retrieval
from ops.cli.base import Context
from ops.logs import configure_logging
from ops.services import redacted
from ops.settings import load_settings
from ops.wiring import one_blas_thread


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TOML file with a [memledger] table; MEMLEDGER_* environment variables win over it.",
)
@click.option("--tenant", help="Tenant to act for (default: MEMLEDGER_TENANT or 'default').")
@click.pass_context
def cli(ctx: click.Context, config: Path | None, tenant: str | None) -> None:
    """memledger: long-term memory for LLM agents on PostgreSQL + pgvector.

    Without MEMLEDGER_DATABASE_URL / MEMLEDGER_REDIS_URL, an embedded PostgreSQL (with
    pgvector) and Redis are started under MEMLEDGER_HOME and reused by later commands.
    """
    settings = load_settings(config, tenant=tenant)
    configure_logging(settings.log_level)
    ctx.obj = Context(settings)


for command in (
    ledger.db,
    ledger.ingest,
    ledger.sessions,
    ledger.sweep,
    ledger.run,
    ledger.reembed_command,
    ledger.worker,
    api.serve,
    api.mcp_command,
    api.keys,
    consolidation.consolidate,
    consolidation.scheduler,
    consolidation.history,
    readmodels.profile,
    readmodels.skills,
    readmodels.rebuild_command,
    retrieval.search_command,
    retrieval.context_command,
    bench.bench,
    eval.eval_group,
):
    cli.add_command(command)


def main() -> None:
    # SIGTERM (timeout, cron, docker stop) exits like Ctrl-C would, running the exit
    # handlers that stop the embedded services; worker, scheduler and serve set their own.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    one_blas_thread()
    try:
        cli(standalone_mode=True)
    except MemledgerError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (psycopg.OperationalError, redis.exceptions.ConnectionError) as exc:
        # a database or Redis that cannot be reached (or refuses the credentials)
        click.echo(f"error: {type(exc).__name__}: {redacted(str(exc))}", err=True)
        sys.exit(3)
