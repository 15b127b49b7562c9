"""``memledger bench api``: the HTTP API under load on loopback.

A real ``memledger serve`` process (no build workers) on a scratch database; the load
comes from this process: ingest events/s through ``POST /v1/events`` in batches of 100
from concurrent clients, then context-bundle latency (p50/p95) with concurrent clients
after copies of the sample transcript have been built.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click
import httpx
import redis

from materializers.runner import project
from observations.builder import build_session, sessions_to_build
from ops.api.keys import create_key
from ops.bench.build import load_sessions
from ops.bench.commands import bench
from ops.bench.common import bench_conn, scratch_database
from ops.bench.ingest import synthetic_events
from ops.cli import Context, pass_ctx
from ops.components import make_build_config
from ops.runtime import wall_clock
from ops.services import running_services

API_DATABASE = "memledger_bench_api"
SCRATCH_REDIS_DB = 15
BATCH = 100
# Questions are all distinct (up to 480 of them): nothing is answered twice the same way.
_TEMPLATES = (
    "What does Maya think about {}{}?",
    "Remind me what Tom said about {}{}.",
    "Any preferences about {} I should know{}?",
    "Plan something around {} for Maya{}.",
    "What happened with {}{}?",
    "Summarize what we know about {} for Tom{}.",
)
_TOPICS = (
    "food", "travel", "trains", "flights", "restaurants", "family", "work", "weekends",
    "allergies", "seats", "hotels", "Porto", "Brussels", "Berlin", "coffee", "music",
    "books", "birthdays", "meetings", "deadlines",
)  # fmt: skip
_WHEN = ("", " this week", " next month", " lately")
QUESTIONS = tuple(t.format(topic, w) for w in _WHEN for t in _TEMPLATES for topic in _TOPICS)


@dataclass(frozen=True, slots=True)
class ApiFigures:
    events: int
    ingest_seconds: float
    contexts: int
    context_p50_ms: float
    context_p95_ms: float
    clients: int

    @property
    def events_per_second(self) -> float:
        return self.events / self.ingest_seconds


@bench.command("api")
@click.option("--events", default=50_000, show_default=True, type=click.IntRange(100))
@click.option("--contexts", default=400, show_default=True, type=click.IntRange(8))
@click.option("--clients", default=8, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--processes", default=2, show_default=True, type=click.IntRange(1, 64),
    help="memledger serve --processes",
)  # fmt: skip
@pass_ctx
def bench_api(ctx: Context, events: int, contexts: int, clients: int, processes: int) -> None:
    """HTTP ingest events/s (batches of 100) and context p50/p95 with concurrent clients,
    against `memledger serve` on loopback."""
    s = ctx.settings
    services = running_services(s.home, s.database_url, s.redis_url)
    with (
        services as urls,
        scratch_database(urls.database_url, API_DATABASE) as url,
        bench_conn(url) as conn,
    ):
        now = wall_clock()
        load_sessions(conn, "bench-api", 100, now)  # copies of the sample, then built
        config = make_build_config(s)
        for tenant, session_id in sessions_to_build(conn, now=now, limit=1000):
            build_session(conn, tenant, session_id, config, now=now)
        project(conn, "bench-api", now=now)
        key = create_key(conn, "bench-api", name="bench", now=now)[1]
        with scratch_redis(urls.redis_url) as redis_url, serving(url, redis_url, processes) as base:
            f = run_api(base, key, events=events, contexts=contexts, clients=clients)
    click.echo(
        f"api: ingest {f.events:,} events in {f.ingest_seconds:.1f} s = "
        f"{f.events_per_second:,.0f} events/s (batches of {BATCH}, {f.clients} clients, "
        f"{processes} server processes)\n"
        f"  context: {f.contexts} bundles, p50 {f.context_p50_ms:.1f} ms, "
        f"p95 {f.context_p95_ms:.1f} ms ({f.clients} clients, query embedding included)"
    )


def run_api(base: str, key: str, *, events: int, contexts: int, clients: int) -> ApiFigures:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    headers = {"Authorization": f"Bearer {key}"}
    start = datetime(2024, 1, 1, tzinfo=UTC)
    stream = list(synthetic_events(events, channels=500, start=start, seed=11, prefix="api"))
    batches = [
        [{**e, "occurred_at": e["occurred_at"].isoformat()} for e in stream[i : i + BATCH]]
        for i in range(0, len(stream), BATCH)
    ]
    t = time.perf_counter()
    _parallel(clients, len(batches), lambda c, i: _post(c, "/v1/events", {"events": batches[i]}),
              base, headers)  # fmt: skip
    ingest_s = time.perf_counter() - t
    latencies: list[float] = []
    lock = threading.Lock()

    def ask(client: httpx.Client, i: int) -> None:
        body = {"query": QUESTIONS[i % len(QUESTIONS)], "user_id": f"maya-{i % 20}"}
        began = time.perf_counter()
        _post(client, "/v1/context", body)
        with lock:
            latencies.append(time.perf_counter() - began)

    _parallel(clients, contexts, ask, base, headers)
    latencies.sort()
    return ApiFigures(
        events,
        ingest_s,
        len(latencies),
        1000 * latencies[len(latencies) // 2],
        1000 * latencies[int(len(latencies) * 0.95)],
        clients,
    )


def _post(client: httpx.Client, path: str, body: object) -> None:
    r = client.post(path, json=body)
    if r.status_code != 200:
        raise click.ClickException(f"{path}: {r.status_code} {r.text[:300]}")


def _parallel(clients: int, n: int, work: object, base: str, headers: dict[str, str]) -> None:
    """``work(client, i)`` for i in 0..n-1, spread over ``clients`` threads."""
    next_i = iter(range(n))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def run() -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            while True:
                with lock:
                    i = next(next_i, None)
                if i is None or errors:
                    return
                try:
                    work(client, i)  # type: ignore[operator]
                except BaseException as exc:
                    errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


@contextmanager
def scratch_redis(url: str) -> Iterator[str]:
    """A Redis database of the benchmark's own on the same server, emptied before and
    after: the builds the server queues and its recent windows stay out of the real ones."""
    scratch = f"{url}{'&' if '?' in url else '?'}db={SCRATCH_REDIS_DB}"
    client = redis.Redis.from_url(scratch)
    try:
        client.flushdb()
        yield scratch
        client.flushdb()
    finally:
        client.close()


@contextmanager
def serving(db_url: str, redis_url: str, processes: int) -> Iterator[str]:
    """``memledger serve --no-workers --processes N`` on a free loopback port, once healthy:
    yields its base URL; stopped at exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "MEMLEDGER_DATABASE_URL": db_url, "MEMLEDGER_REDIS_URL": redis_url,
           "MEMLEDGER_LOG_LEVEL": "warning"}  # fmt: skip
    memledger = str(Path(sys.executable).with_name("memledger"))
    cmd = [memledger, "serve", "--no-workers", "--port", str(port), "--processes", str(processes)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise click.ClickException("memledger serve did not start")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
