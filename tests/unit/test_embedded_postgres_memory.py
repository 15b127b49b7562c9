"""The embedded PostgreSQL's memory, computed from the machine's: the fractions, their
bounds, and a MEMLEDGER_PG_* setting replacing its computed value. Settings are built
directly, not loaded: a loaded one would be the process's for a server started later."""

from __future__ import annotations

import pytest

from ops.embedded_postgres import MemorySettings, memory_for
from ops.settings import InvalidSettings, Settings, load_settings
from ops.wiring import server_memory, server_options

GIB = 1024**3


def mb(value: str) -> int:
    assert value.endswith("MB")
    return int(value.removesuffix("MB"))


def test_a_machine_of_8_gib() -> None:
    assert memory_for(8 * GIB) == MemorySettings(
        shared_buffers="2048MB",
        effective_cache_size="4096MB",
        work_mem="15MB",
        maintenance_work_mem="1024MB",
    )


@pytest.mark.parametrize("gib", [0.25, 0.5, 1, 2, 4, 8, 16, 23.4, 32, 64, 128, 1024])
def test_every_size_stays_within_its_bounds(gib: float) -> None:
    m = memory_for(int(gib * GIB))
    total_mb = gib * 1024
    assert 128 <= mb(m.shared_buffers) <= 16 * 1024
    assert mb(m.shared_buffers) <= max(128, total_mb / 4)
    assert mb(m.effective_cache_size) >= mb(m.shared_buffers)
    assert 4 <= mb(m.work_mem) <= 64
    assert 64 <= mb(m.maintenance_work_mem) <= 2048


def test_a_small_machine_keeps_postgresqls_defaults() -> None:
    m = memory_for(512 * 1024**2)
    assert (m.shared_buffers, m.work_mem, m.maintenance_work_mem) == ("128MB", "4MB", "64MB")


def test_a_setting_wins_over_the_computed_value() -> None:
    settings = Settings(pg_shared_buffers="128MB", pg_work_mem="4 mb")
    m = server_memory(settings, 8 * GIB)
    assert (m.shared_buffers, m.work_mem) == ("128MB", "4MB")
    assert (m.effective_cache_size, m.maintenance_work_mem) == ("4096MB", "1024MB")


def test_the_command_line_options() -> None:
    options = server_options(Settings(pg_shared_buffers="1GB"))
    assert options[:2] == ["-c", "shared_buffers=1GB"]
    assert options[-2:] == ["-c", "shared_preload_libraries=pg_prewarm"]
    assert "shared_preload_libraries=pg_prewarm" not in server_options(Settings(pg_prewarm=False))


@pytest.mark.parametrize("value", ["128", "12 pages", "1.5GB", "32kB", "2TB", "-1MB"])
def test_a_bad_memory_setting_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MEMLEDGER_PG_SHARED_BUFFERS", value)
    with pytest.raises(InvalidSettings, match="MEMLEDGER_PG_SHARED_BUFFERS: "):
        load_settings()
