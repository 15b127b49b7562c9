"""Concurrent embed calls coalesced into shared model runs.

A server embeds one short query per request, from many threads at once. The local model
costs less per text in a batch (on the 2-core machine ≈ 8 ms for a question alone, ≈ 5 ms
each in a batch of 8), and a text's vector does not depend on the batch it ran in, so the
calls that arrive while the model is busy are embedded together in its next run.

There is no timer: a call that finds a free run slot runs at once, alone if nobody else is
waiting, so a lone caller pays nothing. A call of more than ``max_texts`` texts goes
through in parts of ``max_texts``, each queued like a call of its own, so a build's
session waits its turns beside the queries. At most ``runs`` model runs happen at once; the
calls that arrive meanwhile queue, and whoever finishes a run hands its slot to the
oldest waiting call, whose thread then runs everything queued (up to ``max_texts`` texts)
in one batch. Each caller gets exactly the rows of its own texts. When a shared run fails,
its calls are run again one by one, so an error reaches only the caller that caused it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

import numpy as np

from observations.embed_base import EmbedderError, Vectors

Run = Callable[[list[str]], Vectors]


class _Call:
    """One caller's texts, and what became of them."""

    __slots__ = ("done", "error", "promoted", "texts", "vectors", "wake")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.vectors: Vectors | None = None
        self.error: BaseException | None = None
        self.done = False
        self.promoted = False  # handed a run slot: its thread runs the next batch
        self.wake = threading.Event()


class Coalescer:
    """Runs ``run`` over the texts of concurrent :meth:`embed` calls, in shared batches."""

    def __init__(self, run: Run, *, max_texts: int, runs: int = 1) -> None:
        if max_texts < 1 or runs < 1:
            raise ValueError("max_texts and runs must be at least 1")
        self._run = run
        self.max_texts = max_texts
        self.runs = runs
        self._lock = threading.Lock()
        self._queue: deque[_Call] = deque()
        self._running = 0  # run slots held

    @property
    def waiting(self) -> int:
        """Calls queued for a run (not yet taken into one)."""
        with self._lock:
            return len(self._queue)

    def embed(self, texts: list[str]) -> Vectors:
        """``run(texts)``, possibly computed in one batch with other callers' texts."""
        if len(texts) > self.max_texts:
            return self._embed_in_parts(texts)
        call = _Call(texts)
        with self._lock:
            self._queue.append(call)
            lead = self._running < self.runs
            if lead:
                self._running += 1
        while True:
            if lead:
                self._run_next()
            with self._lock:  # handed a slot (even when already done): run; else wait
                lead, call.promoted = call.promoted, False
                if not lead and call.done:
                    break
                call.wake.clear()
            if not lead:
                call.wake.wait()
        if call.error is not None:
            raise call.error
        assert call.vectors is not None
        return call.vectors

    def _embed_in_parts(self, texts: list[str]) -> Vectors:
        """A call of more than ``max_texts`` texts (a build's whole session) takes the run
        slots in turn with the others, ``max_texts`` texts at a time, shortest first (less
        padding): it never runs beside them beyond ``runs``."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = [order[i : i + self.max_texts] for i in range(0, len(order), self.max_texts)]
        vectors = [self.embed([texts[i] for i in part]) for part in parts]
        out = np.empty((len(texts), vectors[0].shape[1]), dtype=vectors[0].dtype)
        for part, rows in zip(parts, vectors, strict=True):
            out[part] = rows
        return out

    def _run_next(self) -> None:
        """Run the oldest queued calls in one batch, then pass the run slot on."""
        with self._lock:
            batch = self._take()
        try:
            self._finish(batch)
        finally:
            with self._lock:
                waiting = next((c for c in self._queue if not c.promoted), None)
                if waiting is None:
                    self._running -= 1
                else:
                    waiting.promoted = True
                    waiting.wake.set()

    def _take(self) -> list[_Call]:
        batch: list[_Call] = []
        size = 0
        while self._queue and (not batch or size + len(self._queue[0].texts) <= self.max_texts):
            call = self._queue.popleft()
            batch.append(call)
            size += len(call.texts)
        return batch

    def _finish(self, batch: list[_Call]) -> None:
        """Compute the batch's vectors and wake its callers."""
        try:
            if len(batch) > 1:
                self._run_together(batch)
            for call in batch:
                if not call.done:
                    self._run_alone(call)
        finally:  # never leave a caller waiting, whatever escaped
            for call in batch:
                if not call.done:
                    self._deliver(call, None, EmbedderError("embedding run was interrupted"))

    def _run_together(self, batch: list[_Call]) -> None:
        """One run for the whole batch. If it fails, its calls are left for ``_run_alone``,
        so that an error reaches the caller whose texts caused it, and only that one."""
        texts = [t for call in batch for t in call.texts]
        try:
            vectors = self._run(texts)
        except Exception:
            return
        if len(vectors) != len(texts):
            return
        start = 0
        for call in batch:
            self._deliver(call, vectors[start : start + len(call.texts)], None)
            start += len(call.texts)

    def _run_alone(self, call: _Call) -> None:
        try:
            vectors = self._run(call.texts)
        except Exception as exc:
            self._deliver(call, None, exc)
        else:
            self._deliver(call, vectors, None)

    def _deliver(self, call: _Call, vectors: Vectors | None, error: BaseException | None) -> None:
        with self._lock:
            call.vectors = None if vectors is None else np.array(vectors, copy=True)
            call.error = error
            call.done = True
            call.wake.set()
