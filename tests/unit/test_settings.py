"""Settings from the environment and a TOML file: a bad value or file is an error naming it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from observations.embed_models import Embedders
from ops.settings import InvalidSettings, Settings, load_settings
from ops.wiring import make_embedder_from, read_concurrency


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("-1", "greater than 0"),
        ("abc", "valid number"),
        ("inf", "finite number"),
        ("nan", "finite number"),
    ],
)
def test_a_bad_environment_value_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, value: str, says: str
) -> None:
    monkeypatch.setenv("MEMLEDGER_SESSION_GAP_MINUTES", value)
    with pytest.raises(InvalidSettings, match=f"MEMLEDGER_SESSION_GAP_MINUTES: .*{says}"):
        load_settings()


def test_a_misspelt_variable_is_named_with_the_setting_it_resembles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMLEDGER_DATABSE_URL", "postgresql://db/memledger")
    with pytest.raises(
        InvalidSettings,
        match=r"MEMLEDGER_DATABSE_URL: no such setting \(did you mean MEMLEDGER_DATABASE_URL\?\)",
    ):
        load_settings()
    monkeypatch.delenv("MEMLEDGER_DATABSE_URL")
    monkeypatch.setenv("memledger_databse_url", "postgresql://db/memledger")  # any case
    with pytest.raises(InvalidSettings, match="memledger_databse_url: no such setting"):
        load_settings()
    monkeypatch.delenv("memledger_databse_url")
    monkeypatch.setenv("MEMLEDGER_Tenant", "acme")  # read like MEMLEDGER_TENANT
    assert load_settings().tenant == "acme"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMLEDGER_SESSION_GAP_MINUTES", "1e13"),  # beyond what a timedelta holds
        ("MEMLEDGER_RETENTION_DAYS", "40000"),
        ("MEMLEDGER_SCHEDULE_SWEEP_SECONDS", "1e10"),
    ],
)
def test_a_duration_past_a_century_is_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InvalidSettings, match=f"{name}: must be at most 100 years"):
        load_settings()
    monkeypatch.setenv(name, "36500")  # a century of seconds, minutes or days is fine
    load_settings()


def test_the_lock_timeout_fits_postgresqls_lock_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLEDGER_CONSOLIDATION_LOCK_TIMEOUT_SECONDS", str(30 * 86400))
    with pytest.raises(InvalidSettings, match=r"LOCK_TIMEOUT_SECONDS: .*less than or equal"):
        load_settings()


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLEDGER_DATABASE_URL", "")
    monkeypatch.setenv("MEMLEDGER_SESSION_GAP_MINUTES", "")
    settings = load_settings()
    assert (settings.database_url, settings.session_gap_minutes) == (None, 30)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('database_url = "postgresql://db/x"\n', r"\[memledger\] table"),  # no table
        ("[memledger]\nsession_gap_minutes = 5\n[other]\nx = 1\n", r"\[memledger\] table"),
        ("[memledger\n", "cannot read"),
        ("[memledger]\nsession_gap_minutes = -5\n", "MEMLEDGER_SESSION_GAP_MINUTES"),
    ],
)
def test_a_bad_settings_file_is_named(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "memledger.toml"
    path.write_text(text)
    with pytest.raises(InvalidSettings, match=says):
        load_settings(path)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(InvalidSettings, match="cannot read"):
        load_settings(path)


def test_a_good_file_is_read_under_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memledger.toml"
    path.write_text("[memledger]\nsession_gap_minutes = 5\nretention_days = 3\n")
    monkeypatch.setenv("MEMLEDGER_RETENTION_DAYS", "7")
    settings = load_settings(path)
    assert (settings.session_gap_minutes, settings.retention_days) == (5, 7)


def test_an_empty_variable_leaves_the_files_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As documented, an empty variable counts as unset (compose's ${VAR} makes them)."""
    config = tmp_path / "memledger.toml"
    config.write_text('[memledger]\ntenant = "acme"\nworker_threads = 5\n')
    monkeypatch.setenv("MEMLEDGER_TENANT", "")
    monkeypatch.setenv("memledger_worker_threads", "")
    s = load_settings(config)
    assert (s.tenant, s.worker_threads) == ("acme", 5)
    monkeypatch.setenv("MEMLEDGER_TENANT", "beta")
    assert load_settings(config).tenant == "beta"


def test_the_llm_extractor_without_an_endpoint_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """It would quietly run the heuristic, with no reason recorded anywhere."""
    monkeypatch.setenv("MEMLEDGER_EXTRACTOR", "llm")
    with pytest.raises(InvalidSettings, match="MEMLEDGER_EXTRACTOR=llm needs MEMLEDGER_LLM_BASE"):
        load_settings()
    monkeypatch.setenv("MEMLEDGER_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert load_settings().extractor == "llm"


def test_the_openai_embedder_takes_the_batch_size_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLEDGER_EMBEDDER", "openai")
    monkeypatch.setenv("MEMLEDGER_EMBED_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMLEDGER_EMBED_BATCH_SIZE", "16")
    embedders = make_embedder_from(load_settings())
    assert isinstance(embedders, Embedders)
    assert embedders.configured.batch_size == 16  # type: ignore[attr-defined]


def test_an_api_process_computes_about_one_read_per_core_with_the_local_embedder() -> None:
    def settings(**given: object) -> Settings:
        return Settings(
            **{"embedder": "local", "api_processes": 1, "api_read_concurrency": None, **given}
        )

    cores = os.cpu_count() or 1
    assert read_concurrency(settings()) == cores
    assert read_concurrency(settings(api_processes=cores)) == 1
    assert read_concurrency(settings(api_processes=cores + 1)) == 1
    assert read_concurrency(settings(embedder="openai")) == 40  # it waits on the network
    assert read_concurrency(settings(api_read_concurrency=5)) == 5
