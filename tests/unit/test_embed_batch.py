"""Concurrent embed calls coalesced into shared runs: each caller gets exactly its own
vectors, an error reaches only the caller that caused it, and nobody is left waiting."""

from __future__ import annotations

import ast
import random
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from observations.embed import HashEmbedder, LocalEmbedder
from observations.embed_base import EmbedderError, Vectors
from observations.embed_batch import Coalescer

HASH = HashEmbedder()
DEADLINE = 20.0  # seconds: a wait past it fails the test instead of hanging it


class GatedRun:
    """Embeds with ``inner`` and records each batch and the thread that ran it; every run
    waits for ``release``, so calls made meanwhile have to queue. A text containing "bad"
    fails its run with a ValueError, one containing "exit" with SystemExit."""

    def __init__(self, inner: Callable[[Sequence[str]], Vectors] = HASH.embed) -> None:
        self.inner = inner
        self.batches: list[list[str]] = []
        self.threads: list[int] = []
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> Vectors:
        with self._lock:
            self.batches.append(list(texts))
            self.threads.append(threading.get_ident())
        assert self.release.wait(DEADLINE)
        if any("exit" in t for t in texts):
            raise SystemExit("exit")
        bad = [t for t in texts if "bad" in t]
        if bad:
            raise ValueError(f"cannot embed {bad}")
        return self.inner(texts)


class Caller(threading.Thread):
    """One ``coalescer.embed(texts)`` in a thread of its own; keeps what it got."""

    def __init__(self, coalescer: Coalescer, texts: list[str]) -> None:
        super().__init__(daemon=True)
        self.coalescer, self.texts = coalescer, texts
        self.vectors: Vectors | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.vectors = self.coalescer.embed(self.texts)
        except BaseException as exc:
            self.error = exc

    def result(self) -> Vectors:
        self.join(DEADLINE)
        assert not self.is_alive(), "caller still waiting"
        if self.error is not None:
            raise self.error
        assert self.vectors is not None
        return self.vectors


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


def start(coalescer: Coalescer, texts: list[str]) -> Caller:
    caller = Caller(coalescer, texts)
    caller.start()
    return caller


def waiting_is(coalescer: Coalescer, n: int) -> Callable[[], bool]:
    return lambda: coalescer.waiting == n


def queue_behind(coalescer: Coalescer, *texts: list[str]) -> list[Caller]:
    """Callers started one by one, each waiting in the queue before the next starts."""
    callers = []
    for n, t in enumerate(texts, 1):
        callers.append(start(coalescer, t))
        wait_until(waiting_is(coalescer, n))
    return callers


def test_a_lone_call_runs_at_once_in_the_callers_own_thread() -> None:
    run = GatedRun()
    run.release.set()
    vectors = Coalescer(run, max_texts=8).embed(["a cat", "a dog"])
    assert np.array_equal(vectors, HASH.embed(["a cat", "a dog"]))
    assert run.batches == [["a cat", "a dog"]]
    assert run.threads == [threading.get_ident()]


def test_calls_arriving_during_a_run_share_the_next_one_and_each_get_their_own_vectors() -> None:
    run = GatedRun()
    coalescer = Coalescer(run, max_texts=32)
    first = start(coalescer, ["first"])
    wait_until(lambda: len(run.batches) == 1)
    texts = [["b1"], ["c1", "c2"], ["d1", "d2", "d3"]]
    queued = queue_behind(coalescer, *texts)
    run.release.set()
    assert np.array_equal(first.result(), HASH.embed(["first"]))
    for caller, own in zip(queued, texts, strict=True):
        assert np.array_equal(caller.result(), HASH.embed(own))
    assert run.batches == [["first"], ["b1", "c1", "c2", "d1", "d2", "d3"]]


def test_a_shared_run_holds_at_most_max_texts_texts_and_keeps_arrival_order() -> None:
    run = GatedRun()
    coalescer = Coalescer(run, max_texts=4)
    first = start(coalescer, ["a"])
    wait_until(lambda: len(run.batches) == 1)
    queued = queue_behind(coalescer, ["b1", "b2", "b3"], ["c1", "c2"], ["d1"])
    run.release.set()
    for caller in [first, *queued]:
        assert np.array_equal(caller.result(), HASH.embed(caller.texts))
    assert run.batches == [["a"], ["b1", "b2", "b3"], ["c1", "c2", "d1"]]


def test_an_error_reaches_only_the_caller_whose_texts_caused_it() -> None:
    run = GatedRun()
    coalescer = Coalescer(run, max_texts=8)
    first = start(coalescer, ["first"])
    wait_until(lambda: len(run.batches) == 1)
    good, bad = queue_behind(coalescer, ["good"], ["bad text"])
    run.release.set()
    first.result()
    assert np.array_equal(good.result(), HASH.embed(["good"]))
    with pytest.raises(ValueError, match="bad text"):
        bad.result()
    assert run.batches[1:] == [["good", "bad text"], ["good"], ["bad text"]]


def test_a_call_of_more_than_max_texts_takes_the_run_slot_in_turns_shortest_first() -> None:
    run = GatedRun()
    coalescer = Coalescer(run, max_texts=2)
    small = start(coalescer, ["s"])
    wait_until(lambda: len(run.batches) == 1)  # the one run slot is busy
    texts = ["l-three", "l1", "l-two", "l-four!"]
    large = start(coalescer, texts)
    wait_until(waiting_is(coalescer, 1))  # it waits for the slot, as any call does
    assert len(run.batches) == 1
    run.release.set()
    assert np.array_equal(large.result(), HASH.embed(texts))  # in the caller's order
    small.result()
    assert run.batches == [["s"], ["l1", "l-two"], ["l-three", "l-four!"]]


def test_up_to_runs_runs_happen_at_once_and_later_calls_queue() -> None:
    run = GatedRun()
    coalescer = Coalescer(run, max_texts=8, runs=2)
    a, b = start(coalescer, ["a"]), start(coalescer, ["b"])
    wait_until(lambda: len(run.batches) == 2)  # two runs in progress together
    [c] = queue_behind(coalescer, ["c"])
    run.release.set()
    for caller in (a, b, c):
        assert np.array_equal(caller.result(), HASH.embed(caller.texts))
    assert sorted(map(tuple, run.batches)) == [("a",), ("b",), ("c",)]


def test_no_caller_is_left_waiting_when_a_run_is_interrupted() -> None:
    run = GatedRun()
    coalescer = Coalescer(run, max_texts=8)
    first = start(coalescer, ["first"])
    wait_until(lambda: len(run.batches) == 1)
    leader, other = queue_behind(coalescer, ["exit now"], ["other"])
    run.release.set()
    first.result()
    with pytest.raises(SystemExit):  # in the thread that ran the shared batch
        leader.result()
    with pytest.raises(EmbedderError, match="interrupted"):
        other.result()
    after = start(coalescer, ["after"])  # the run slot was handed back
    assert np.array_equal(after.result(), HASH.embed(["after"]))


@pytest.mark.parametrize(("runs", "max_texts"), [(1, 1), (1, 5), (2, 3), (3, 8)])
def test_many_concurrent_callers_each_get_their_own_vectors_or_their_own_error(
    runs: int, max_texts: int
) -> None:
    def embed(texts: list[str]) -> Vectors:
        if any("bad" in t for t in texts):
            raise ValueError(f"bad in {texts}")
        return HASH.embed(texts)

    coalescer = Coalescer(embed, max_texts=max_texts, runs=runs)
    rng = random.Random(runs * 100 + max_texts)
    plans = [
        [f"c{c} t{i} w{j}" + (" bad" if rng.random() < 0.05 else "") for j in range(size)]
        for c in range(12)
        for i, size in enumerate(rng.choices(range(1, 7), k=40))
    ]
    outcomes: dict[int, Vectors | BaseException] = {}
    lock = threading.Lock()
    next_plan = iter(range(len(plans)))

    def work() -> None:
        while (i := next(next_plan, None)) is not None:
            try:
                got: Vectors | BaseException = coalescer.embed(plans[i])
            except ValueError as exc:
                got = exc
            with lock:
                outcomes[i] = got

    threads = [threading.Thread(target=work, daemon=True) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE)
    assert not any(t.is_alive() for t in threads), "callers still waiting"
    for i, texts in enumerate(plans):
        got = outcomes[i]
        if any("bad" in t for t in texts):
            # its own error: raised by a run of its own texts (a long call's part of them)
            assert isinstance(got, ValueError)
            named = ast.literal_eval(str(got).removeprefix("bad in "))
            assert set(named) <= set(texts) and any("bad" in t for t in named)
        else:
            assert isinstance(got, np.ndarray) and np.array_equal(got, HASH.embed(texts))
    assert coalescer.waiting == 0
    after = start(coalescer, ["after"])  # no run slot was lost
    assert np.array_equal(after.result(), HASH.embed(["after"]))


def test_the_local_model_gives_each_caller_of_a_shared_run_its_vectors_alone() -> None:
    local = LocalEmbedder()
    texts = [
        ["Where does Maya's sister live?"],
        ["Book me a train to Porto for Friday.", "Which seat does Maya prefer?"],
        ["What is Tom working on and where does he live, and what does he do on weekends?"],
        ["ok"],
    ]
    alone = [local.embed(t) for t in texts]
    run = GatedRun(local.embed)
    coalescer = Coalescer(run, max_texts=32)
    first = start(coalescer, ["first"])
    wait_until(lambda: len(run.batches) == 1)
    queued = queue_behind(coalescer, *texts)
    run.release.set()
    first.result()
    for caller, expected in zip(queued, alone, strict=True):
        np.testing.assert_allclose(caller.result(), expected, rtol=0, atol=1e-6)
    assert len(run.batches) == 2  # all four shared one run


def test_concurrent_calls_to_the_local_embedder_return_the_vectors_of_their_own_texts() -> None:
    local = LocalEmbedder(runs=1)
    texts = [[f"question {i} about {topic}"] for i, topic in enumerate(["tea", "trains", "cats"])]
    texts += [["a longer question about where Maya's sister lives and what she does"]]
    alone = [local.embed(t) for t in texts]
    barrier = threading.Barrier(len(texts) * 2)
    results: dict[int, list[Vectors]] = {i: [] for i in range(len(texts) * 2)}

    def work(i: int) -> None:
        barrier.wait(DEADLINE)
        for _ in range(5):
            results[i].append(local.embed(texts[i % len(texts)]))

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE)
    assert not any(t.is_alive() for t in threads)
    for i, got in results.items():
        assert len(got) == 5
        for vectors in got:
            np.testing.assert_allclose(vectors, alone[i % len(texts)], rtol=0, atol=1e-6)
