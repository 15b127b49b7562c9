"""``memledger run``, the main job, as a process on a fresh database: it succeeds, and what
it prints is what the README shows (abridged the README's way), ids included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ops.services import drop_database, recreate_database

README = Path(__file__).resolve().parents[2] / "README.md"
WIDTH = 152  # the README cuts longer lines to this many characters, "…" included
# Of the memory entries (two lines each: the entry, then its key and provenance) the README
# shows the first six and the one that superseded another; each run of entries left out
# is one "  ..." line.
FIRST_ENTRIES = 6
ALSO_SHOWN = "key=preference:seat"


def readme_run_block() -> list[str]:
    text = README.read_text()
    section = text[text.index("## `make run`") :]
    start = section.index("```\n") + len("```\n")
    return section[start : section.index("```", start)].rstrip("\n").split("\n")


def abridged(lines: list[str]) -> list[str]:
    shown: list[str] = []
    entries = 0
    i = 0
    while i < len(lines):
        if not lines[i].startswith("  ["):  # not a memory entry
            shown.append(lines[i])
            i += 1
            continue
        if entries < FIRST_ENTRIES or ALSO_SHOWN in lines[i + 1]:
            shown += lines[i : i + 2]
        elif shown[-1] != "  ...":
            shown.append("  ...")
        entries += 1
        i += 2
    return [line if len(line) <= WIDTH else line[: WIDTH - 1] + "…" for line in shown]


def test_the_main_job_prints_what_the_readme_shows(
    admin_url: str, template_db: str, redis_url: str
) -> None:
    db_url = recreate_database(admin_url, "memledger_test_main_job", template_db)
    env = {**os.environ, "MEMLEDGER_DATABASE_URL": db_url, "MEMLEDGER_REDIS_URL": redis_url}
    memledger = str(Path(sys.executable).with_name("memledger"))
    try:
        done = subprocess.run(
            [memledger, "run"], env=env, capture_output=True, text=True, timeout=300
        )
    finally:
        drop_database(admin_url, "memledger_test_main_job")
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout.rstrip("\n").split("\n")
    # the first two lines name the database and Redis, which differ from run to run
    assert printed[0].startswith("database: ") and printed[1].startswith("redis: ")
    assert abridged(printed)[2:] == readme_run_block()[2:]
