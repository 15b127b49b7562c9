"""The pipeline of the default mode: broker, worker threads, serve's build process, waiting
for builds."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

import dramatiq
import structlog
from dramatiq.errors import QueueJoinTimeout

from ledger.db import Conn, make_pool
from materializers.runner import ProjectStats, project
from observations.builder import BuildConfig, waiting_builds
from observations.embed import Embedder
from observations.outbox import HandOver, hand_over
from ops.broker import close_broker, setup_broker, start_worker
from ops.metrics import shared_metrics
from ops.settings import SERVE_SETTINGS_ENV
from ops.wiring import (
    Runtime,
    load_model,
    make_build_config,
    make_skill_policy,
    switch_for_builders,
    wall_clock,
)
from ops.worker import actors
from ops.worker.scheduler import make_scheduler

log = structlog.get_logger(__name__)
CHILD_STOP_SECONDS = 10  # a stopped build process finishes its builds within this, or is killed
PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies
IDLE_NICE = 19  # the lowest priority: with it the build process is scheduled as idle


@contextmanager
def in_process_workers(
    rt: Runtime, *, threads: int | None = None, config: BuildConfig | None = None
) -> Iterator[dramatiq.Actor[[str, int], None]]:
    """Worker threads beside the caller (default: the setting); yields the build actor to
    enqueue with. One thread builds in the order of the queue."""
    s = rt.settings
    threads = threads or s.worker_threads
    broker = setup_broker(rt.urls.redis_url)
    with (
        make_pool(rt.urls.database_url, max_size=threads + 1) as pool,
        shared_metrics(rt.urls.redis_url) as metrics,
    ):
        config = config or make_build_config(s)
        load_model(config.embedder)  # before the first build is taken
        switch_for_builders()
        state = actors.WorkerState(s, pool, config, metrics)
        actor = actors.register(broker, state)
        worker = start_worker(broker, threads)
        try:
            yield actor
        finally:
            worker.stop()
            close_broker(broker)


@contextmanager
def scheduled_consolidation(
    rt: Runtime, actor: dramatiq.Actor[[str, int], None], *, embedder: Embedder | None = None
) -> Iterator[None]:
    """The consolidation schedule in this process (the default mode's scheduler), queueing
    the sweep's builds with ``actor`` and embedding with ``embedder`` (the builds', when
    they run here too); stops after any running job when the block ends."""
    with shared_metrics(rt.urls.redis_url) as metrics:
        scheduler = make_scheduler(
            rt.urls.database_url,
            rt.settings,
            lambda sessions: actors.enqueue_builds(actor, sessions),
            metrics,
            embedder=embedder,
        )
        scheduler.start()
        try:
            yield
        finally:
            scheduler.shutdown(wait=True)


@contextmanager
def build_actor(rt: Runtime) -> Iterator[dramatiq.Actor[[str, int], None]]:
    """The build actor on the Redis broker, for enqueueing only (no worker state)."""
    broker = setup_broker(rt.urls.redis_url)
    try:
        yield actors.register(broker, None)
    finally:
        close_broker(broker)


def enqueue_pending(
    rt: Runtime, actor: dramatiq.Actor[[str, int], None], session_ids: Sequence[int] | None = None
) -> int:
    """Hand to the queue every build waiting in the outbox, with those handed over longer
    than the requeue delay ago (their message may be lost); only the tenant's
    ``session_ids`` when given."""
    s, now = rt.settings, wall_clock()
    what = HandOver(
        now,
        s.build_max_attempts,
        stale_before=now - timedelta(seconds=s.sweep_requeue_after_seconds),
        tenant_id=None if session_ids is None else s.tenant,
        session_ids=session_ids,
    )
    return len(hand_over(rt.conn, lambda sessions: actors.enqueue_builds(actor, sessions), what))


def wait_for_builds(conn: Conn, *, timeout: float, below: int = 1) -> int:
    """Poll until fewer than ``below`` sessions wait for a build (by default none); returns
    how many wait then, or when ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        waiting = waiting_builds(conn)
        if waiting < below or time.monotonic() > deadline:
            return waiting
        time.sleep(0.2)


def wait_for_projections(actor: dramatiq.Actor[[str, int], None], *, timeout: float) -> bool:
    """Wait until the read-model projections queued so far have run (the builds queue one
    each); False if some are still queued after ``timeout`` seconds."""
    try:
        actor.broker.join(actors.READ_MODEL_QUEUE, timeout=int(timeout * 1000))
    except QueueJoinTimeout:
        return False
    return True


def project_read_models(rt: Runtime) -> ProjectStats:
    """Apply the tenant's entry changes to its read models now, in this process.

    Workers queue a projection after each build; this catches up at once (a no-op when they
    already have), so what runs next reads current read models.
    """
    return project(
        rt.conn, rt.settings.tenant, now=wall_clock(), policy=make_skill_policy(rt.settings)
    )


@contextmanager
def build_process(rt: Runtime) -> Iterator[subprocess.Popen[bytes]]:
    """``memledger worker --schedule`` as a child of this process, on this process's services:
    builds and the consolidation schedule of ``memledger serve``'s default mode, at a CPU
    priority ``build_nice`` lower than the API's, so a backlog of builds takes only the CPU
    that requests leave. The child exits with this process; the block's end stops it."""
    urls = {"database_url": rt.urls.database_url, "redis_url": rt.urls.redis_url}
    env = {**os.environ, SERVE_SETTINGS_ENV: rt.settings.model_copy(update=urls).model_dump_json()}
    command = [sys.executable, "-m", "ops", "worker", "--schedule", "--child-of", str(os.getpid())]
    child = subprocess.Popen(command, env=env)
    try:
        yield child
    finally:
        child.terminate()
        try:
            child.wait(CHILD_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            log.warning("build_process_killed", pid=child.pid, after_seconds=CHILD_STOP_SECONDS)
            child.kill()
            child.wait()


def follow_parent(parent_pid: int, nice: int) -> None:
    """Make this process a child of ``parent_pid`` that yields the CPU to it and receives
    SIGTERM when it dies (Linux; elsewhere the parent's exit stops it). ``nice`` lowers its
    priority; at ``IDLE_NICE`` it also runs under Linux's SCHED_IDLE policy, so it gets a
    core only while no other process wants one (a lower weight alone still lets it take
    whole time slices from requests)."""
    os.nice(nice)
    if nice == IDLE_NICE and hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # it died before the line above took effect
        os.kill(os.getpid(), signal.SIGTERM)
