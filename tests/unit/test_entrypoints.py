"""What every memledger process sets up before it runs a command."""

from __future__ import annotations

import signal
import sys

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from ops.cli import main


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_the_memledger_command_runs_numpys_blas_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with threadpool_limits(limits=2, user_api="blas"):  # restored on leaving
        if _blas_threads() != {2}:
            pytest.skip("this machine's BLAS does not run on two threads")
        monkeypatch.setattr(sys, "argv", ["memledger", "--help"])
        on_sigterm = signal.getsignal(signal.SIGTERM)  # main() sets its own
        try:
            with pytest.raises(SystemExit) as exited:
                main()
        finally:
            signal.signal(signal.SIGTERM, on_sigterm)
        assert exited.value.code == 0
        assert _blas_threads() == {1}
