"""``memledger bench api``'s load against a real server: all it sends is served and stored;
and its CPU clock counts the server's processes apart from the load generator."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from ledger.db import connect
from ops.bench.api import (
    BATCH,
    WARMUP_BATCHES,
    WARMUP_CONTEXTS,
    CpuClock,
    run_api,
    stored_bench_events,
)
from tests.system.live_api import Server

# A "server" that has started a worker process; on "go" both spin for a moment of CPU.
_SERVER = """
import subprocess, sys, time
def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
worker = subprocess.Popen(
    [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
)
print("ready", flush=True)
sys.stdin.readline()
worker.stdin.write("go\\n"); worker.stdin.flush()
spin(0.3)
worker.stdout.readline()
print("done", flush=True)
sys.stdin.readline()
worker.kill()
"""
_WORKER = """
import sys, time
sys.stdin.readline()
end = time.process_time() + 0.2
while time.process_time() < end:
    pass
print("done", flush=True)
time.sleep(60)
"""


def test_the_load_is_stored_whole_and_the_warm_up_is_not_timed(server: Server) -> None:
    def contexts_served() -> float:
        served = server.state.metrics.registry.get_sample_value(
            "memledger_retrieval_seconds_count", {"route": "context"}
        )
        return served or 0.0

    before = contexts_served()
    figures = run_api(
        server.url,
        server.key("bench"),
        events=250,
        contexts=8,
        clients=3,
        server=psutil.Process(),  # this test's server runs in a thread of this process
    )

    assert (figures.events, figures.context.cpu.requests, figures.clients) == (250, 8, 3)
    assert figures.ingest.requests == 3  # batches of 100: 100, 100, 50
    assert 0 < figures.context.p50_ms <= figures.context.p95_ms
    assert figures.ingest.wall > 0 and figures.context.cpu.wall > 0
    with connect(server.db_url, autocommit=True) as conn:
        assert stored_bench_events(conn, "bench") == WARMUP_BATCHES * BATCH + 250
    assert contexts_served() - before == WARMUP_CONTEXTS + 8


def test_the_cpu_clock_counts_the_server_and_not_the_load_generator() -> None:
    program = f"_WORKER = {_WORKER!r}\n{_SERVER}"
    with subprocess.Popen(
        [sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        clock = CpuClock(psutil.Process(proc.pid))
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        end = time.process_time() + 0.2  # the load generator's own CPU
        while time.process_time() < end:
            pass
        use = clock.read(10)
        proc.stdin.write("stop\n")
        proc.stdin.flush()

    assert 0.45 <= use.server <= 0.9  # the server and its worker
    assert 0.18 <= use.client <= 0.5
    assert use.machine >= 0.9 * (use.server + use.client)
    assert use.wall >= 0.45
    line = use.per_request("request")
    assert line.startswith("CPU per request: server ")
    assert f"of {psutil.cpu_count()} cores busy" in line
