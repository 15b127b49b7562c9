"""``memledger``: the command line for every stage."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import click
import psycopg
import redis
from tqdm import tqdm

from ledger.errors import MemledgerError
from ops.logs import configure_logging
from ops.services import redacted
from ops.settings import Settings, load_settings


class Context:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings


pass_ctx = click.make_pass_decorator(Context)
F = TypeVar("F", bound=Callable[..., Any])


def tenant_option(command: F) -> F:
    """``--tenant`` after the command name too (``memledger keys create --tenant acme``);
    it wins over the one before."""

    def use(ctx: click.Context, _: click.Parameter, tenant: str | None) -> None:
        obj = ctx.find_object(Context)  # made by the group before its command is parsed
        if tenant is not None and obj is not None:
            obj.settings = obj.settings.model_copy(update={"tenant": tenant})

    option = click.option("--tenant", expose_value=False, callback=use, help="Tenant to act for.")
    return option(command)


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


def main() -> None:
    from ops import commands  # noqa: F401  (registers the subcommands)

    # SIGTERM (timeout, cron, docker stop) exits like Ctrl-C would, running the exit
    # handlers that stop the embedded services; worker, scheduler and serve set their own.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        cli(standalone_mode=True)
    except MemledgerError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (psycopg.OperationalError, redis.exceptions.ConnectionError) as exc:
        # a database or Redis that cannot be reached (or refuses the credentials)
        click.echo(f"error: {type(exc).__name__}: {redacted(str(exc))}", err=True)
        sys.exit(3)


def progress(total: int | None, desc: str, unit: str) -> tqdm[Any]:
    """A progress bar on stderr, shown only on a terminal (a log is not redrawn)."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty())


def sample_path() -> Path:
    return Path(str(resources.files("ops").joinpath("samples/sample.jsonl")))


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A plain fixed-width text table."""
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if hasattr(value, "strftime"):
        return str(value.strftime("%Y-%m-%d %H:%M"))
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)
