"""The API's memory of resolved keys: what a lookup said is kept for the TTL, no longer."""

from __future__ import annotations

import pytest

from ops.api.keys import KeyCache, KeyOwner

OWNER = KeyOwner("acme", 1, "backend", ())


class Lookups:
    """A key table the cache reads through, counting the reads."""

    def __init__(self, keys: dict[str, KeyOwner]) -> None:
        self.keys, self.reads = keys, 0

    def __call__(self, key: str) -> KeyOwner | None:
        self.reads += 1
        return self.keys.get(key)


def test_a_key_is_looked_up_once_per_ttl_and_a_revocation_shows_when_it_expires() -> None:
    table, cache = Lookups({"good": OWNER}), KeyCache(ttl=10)
    assert cache.resolve("good", 100.0, table) == OWNER
    del table.keys["good"]  # revoked
    assert cache.resolve("good", 109.9, table) == OWNER and table.reads == 1
    assert cache.resolve("good", 110.0, table) is None and table.reads == 2


def test_a_bad_key_is_remembered_as_bad() -> None:
    table, cache = Lookups({}), KeyCache(ttl=10)
    assert cache.resolve("bad", 0.0, table) is None
    assert cache.resolve("bad", 5.0, lambda key: pytest.fail("looked up again")) is None
    assert table.reads == 1


def test_a_failed_lookup_is_not_remembered() -> None:
    def down(key: str) -> KeyOwner | None:
        raise ConnectionError("database down")

    table, cache = Lookups({"good": OWNER}), KeyCache(ttl=10)
    with pytest.raises(ConnectionError):
        cache.resolve("good", 0.0, down)
    assert cache.resolve("good", 1.0, table) == OWNER and table.reads == 1


def test_a_zero_ttl_looks_every_key_up_and_the_cache_keeps_at_most_max_keys() -> None:
    table = Lookups({"good": OWNER})
    off = KeyCache(ttl=0)
    for _ in range(3):
        assert off.resolve("good", 1.0, table) == OWNER
    assert table.reads == 3
    small = KeyCache(ttl=10, max_keys=2)
    for i, key in enumerate(["a", "b", "good"]):
        small.resolve(key, float(i), table)
    reads = table.reads
    small.resolve("good", 3.0, table)
    small.resolve("b", 3.0, table)
    assert table.reads == reads  # kept
    small.resolve("a", 3.0, table)
    assert table.reads == reads + 1  # the oldest, dropped
