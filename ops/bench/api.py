"""``memledger bench api``: the HTTP API under load on loopback.

A real ``memledger serve`` process (no build workers) on a scratch database; the load
comes from this process: ingest events/s through ``POST /v1/events`` in batches of 100
from concurrent clients, then context-bundle latency (p50/p95) with concurrent clients
after copies of the sample transcript have been built.
"""

from __future__ import annotations

import http.client
import json
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
from urllib.parse import urlsplit

import click
import psutil
import redis

from ledger.db import Conn
from ledger.events import iter_chunks
from materializers import project
from observations.builder import BuildConfig, build_session, sessions_to_build
from ops.api.keys import create_key
from ops.bench.build import load_sessions
from ops.bench.ingest import synthetic_events

API_DATABASE = "memledger_bench_api"
TENANT = "bench-api"
SCRATCH_REDIS_DB = 15
BATCH = 100
PREFIX = "api"  # of the load's external ids
# Untimed requests first, as a long-running server would have had them: every server
# process up, its pool's connections open, its statements prepared, the model warm.
WARMUP_BATCHES = 20
WARMUP_CONTEXTS = 40
# Questions are all distinct (up to 2,520 of them, warm-up included): nothing is answered
# twice the same way.
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
    "books", "birthdays", "meetings", "deadlines", "Lisbon", "the hospital", "shifts",
    "night shifts", "nursing", "the team", "the project", "the launch", "the budget",
    "invoices", "the dentist", "running", "the gym", "yoga", "the kids", "school",
    "the car", "parking", "the apartment", "rent", "the landlord", "groceries", "cooking",
    "vegetarian dishes", "wine", "the wedding", "gifts", "the holidays", "Christmas",
    "the beach", "hiking", "the dog", "the vet", "movies", "podcasts", "languages",
    "Portuguese lessons", "the conference", "the flight home", "the train to Porto",
)  # fmt: skip
_WHEN = ("", " this week", " next month", " lately", " last week", " this year", " recently")
QUESTIONS = tuple(t.format(topic, w) for w in _WHEN for t in _TEMPLATES for topic in _TOPICS)


@dataclass(frozen=True, slots=True)
class CpuUse:
    """The CPU seconds a timed phase of ``requests`` took, over its ``wall`` seconds: the
    server's processes, this load generator, and the whole machine (so also PostgreSQL and
    Redis, if local)."""

    requests: int
    wall: float
    server: float
    client: float
    machine: float

    def per_request(self, unit: str) -> str:
        def ms(seconds: float) -> str:
            return f"{1000 * seconds / self.requests:.1f} ms"

        rest = self.machine - self.server - self.client
        return (
            f"CPU per {unit}: server {ms(self.server)}, load generator {ms(self.client)}, "
            f"rest of the machine (PostgreSQL, Redis, ...) {ms(rest)}; "
            f"{self.machine / self.wall:.2f} of {psutil.cpu_count()} cores busy"
        )


class CpuClock:
    """Started at creation; :meth:`read` gives the CPU used since. ``server`` is the server's
    main process: its children (``--processes``) are counted with it."""

    def __init__(self, server: psutil.Process) -> None:
        self._server = server
        self._start = self._now()

    def read(self, requests: int) -> CpuUse:
        """The CPU used since the start by a phase of ``requests``."""
        return CpuUse(requests, *(b - a for a, b in zip(self._start, self._now(), strict=True)))

    def _now(self) -> tuple[float, float, float, float]:
        server = 0.0
        for proc in [self._server, *self._server.children(recursive=True)]:
            times = proc.cpu_times()
            server += times.user + times.system
        own = psutil.Process().cpu_times()
        machine = psutil.cpu_times()
        busy = machine.user + machine.nice + machine.system + machine.irq + machine.softirq
        return time.perf_counter(), server, own.user + own.system, busy


@dataclass(frozen=True, slots=True)
class ApiFigures:
    events: int
    ingest: CpuUse  # its requests: the batches
    context: ContextFigures
    clients: int

    @property
    def events_per_second(self) -> float:
        return self.events / self.ingest.wall


def run_api(
    base: str, key: str, *, events: int, contexts: int, clients: int, server: psutil.Process
) -> ApiFigures:
    """Time the load against the server at ``base`` (``server`` is its main process)."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    start = datetime(2024, 1, 1, tzinfo=UTC)
    total = WARMUP_BATCHES * BATCH + events
    stream = list(synthetic_events(total, channels=500, start=start, seed=11, prefix=PREFIX))
    # Request bodies are encoded before the clock starts: a chat backend's JSON encoding
    # is not the server's work, and here it would take the server's CPU.
    batches = [
        _body({"events": [{**e, "occurred_at": e["occurred_at"].isoformat()} for e in chunk]})
        for chunk in iter_chunks(stream, BATCH)
    ]
    load = Load(base, headers, clients)
    load.post_all("/v1/events", batches[:WARMUP_BATCHES])
    clock = CpuClock(server)
    ingest = clock.read(len(load.post_all("/v1/events", batches[WARMUP_BATCHES:])))
    return ApiFigures(events, ingest, time_contexts(load, contexts, server), clients)


@dataclass(frozen=True, slots=True)
class ContextFigures:
    cpu: CpuUse  # its requests: the bundles
    p50_ms: float
    p95_ms: float


def time_contexts(load: Load, contexts: int, server: psutil.Process) -> ContextFigures:
    """Context bundles for distinct questions after an untimed warm-up: latency and CPU."""
    questions = [
        _body({"query": q, "user_id": f"maya-{i % 20}"})
        for i, q in enumerate(QUESTIONS[: WARMUP_CONTEXTS + contexts])
    ]
    load.post_all("/v1/context", questions[:WARMUP_CONTEXTS])
    clock = CpuClock(server)
    latencies = sorted(load.post_all("/v1/context", questions[WARMUP_CONTEXTS:]))
    return ContextFigures(
        clock.read(len(latencies)),
        1000 * latencies[len(latencies) // 2],
        1000 * latencies[int(len(latencies) * 0.95)],
    )


def prepare(conn: Conn, config: BuildConfig, now: datetime) -> str:
    """The bench tenant's memory: copies of the sample, built and projected; returns a new
    API key of the tenant."""
    load_sessions(conn, TENANT, 100, now)
    for tenant, session_id in sessions_to_build(conn, now=now, limit=1000):
        build_session(conn, tenant, session_id, config, now=now)
    project(conn, TENANT, now=now)
    conn.execute("ANALYZE")  # as autovacuum would have by now on a live database
    return create_key(conn, TENANT, name="bench", now=now)[1]


def stored_bench_events(conn: Conn, tenant_id: str) -> int:
    """How many of the load's events (by their external ids) the tenant's ledger holds."""
    row = conn.execute(
        "SELECT count(*) AS n FROM memory_session_events"
        " WHERE tenant_id = %s AND starts_with(external_id, %s)",
        [tenant_id, PREFIX],
    ).fetchone()
    assert row is not None
    return int(row["n"])


def _body(value: object) -> bytes:
    return json.dumps(value).encode()


class _Client:
    """One keep-alive HTTP/1.1 connection on ``http.client``: a load generator that takes
    little of the CPU it shares with the server (``httpx`` costs several times more per
    request)."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        url = urlsplit(base)
        self._conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
        self._headers = headers

    def post(self, path: str, body: bytes) -> None:
        self._conn.request("POST", path, body=body, headers=self._headers)
        response = self._conn.getresponse()
        text = response.read()
        if response.status != 200:
            raise click.ClickException(f"{path}: {response.status} {text[:300]!r}")

    def close(self) -> None:
        self._conn.close()


@dataclass(frozen=True, slots=True)
class Load:
    """Closed-loop clients: each posts its next body as soon as its last one is answered."""

    base: str
    headers: dict[str, str]
    clients: int

    def post_all(self, path: str, bodies: list[bytes]) -> list[float]:
        """Post every body to ``path``, spread over the clients; each request's seconds."""
        pending = iter(bodies)
        lock = threading.Lock()
        seconds: list[float] = []
        errors: list[BaseException] = []

        def run() -> None:
            client = _Client(self.base, self.headers)
            try:
                while True:
                    with lock:
                        body = next(pending, None)
                    if body is None or errors:
                        return
                    began = time.perf_counter()
                    client.post(path, body)
                    with lock:
                        seconds.append(time.perf_counter() - began)
            except BaseException as exc:
                errors.append(exc)
            finally:
                client.close()

        threads = [threading.Thread(target=run) for _ in range(self.clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        return seconds


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


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):  # not listening, or not answering yet
        return False
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class Served:
    url: str  # the base URL
    process: psutil.Process  # the main process; --processes workers are its children


@contextmanager
def serving(
    db_url: str, redis_url: str, processes: int, *, workers: bool = False
) -> Iterator[Served]:
    """``memledger serve --[no-]workers --processes N`` on a free loopback port, once
    healthy; stopped at exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "MEMLEDGER_DATABASE_URL": db_url, "MEMLEDGER_REDIS_URL": redis_url,
           "MEMLEDGER_LOG_LEVEL": "warning"}  # fmt: skip
    memledger = str(Path(sys.executable).with_name("memledger"))
    cmd = [memledger, "serve", "--workers" if workers else "--no-workers", "--port", str(port),
           "--processes", str(processes)]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if _healthy(port):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise click.ClickException("memledger serve did not start")
            time.sleep(0.2)
        yield Served(base, psutil.Process(proc.pid))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
