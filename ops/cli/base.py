"""What every command module shares: the context object, ``--tenant`` after a command,
a progress bar, and plain text tables."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from tqdm import tqdm

from ops.settings import Settings


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


def progress(total: int | None, desc: str, unit: str) -> tqdm[Any]:
    """A progress bar on stderr, shown only on a terminal (a log is not redrawn)."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty())


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
