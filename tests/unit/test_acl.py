"""Private directories with POSIX ACL entries: what a named user may do there is never
widened, and the owner alone keeps the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.errors import ServiceError
from ops.acl import (
    GROUP_OBJ,
    MASK,
    OTHER,
    USER,
    USER_OBJ,
    Entry,
    X,
    make_private,
    read_acl,
    write_acl,
)

USER_ID = 65534


def effective(entries: list[Entry], uid: int) -> int:
    """What the named user ``uid`` may do: its entry's permissions under the mask."""
    mask = next((e.perm for e in entries if e.tag == MASK), 7)
    return next(e.perm for e in entries if e.tag == USER and e.id == uid) & mask


def with_acl(path: Path, entries: list[Entry]) -> Path:
    path.mkdir()
    try:
        write_acl(path, entries)
    except ServiceError:
        pytest.skip("the file system takes no POSIX ACLs")
    return path


def test_a_user_shut_out_by_the_mask_stays_shut_out(tmp_path: Path) -> None:
    """The owner shared the directory with a user, then ran chmod 700 (the mask: none)."""
    shared = [Entry(USER_OBJ, 7), Entry(USER, 7, USER_ID), Entry(GROUP_OBJ, 5),
              Entry(MASK, 0), Entry(OTHER, 0)]  # fmt: skip
    home = with_acl(tmp_path / "home", shared)
    make_private(home)
    assert effective(read_acl(home), USER_ID) == 0


def test_a_named_users_traversal_is_kept_and_the_group_loses_everything(tmp_path: Path) -> None:
    granted = [Entry(USER_OBJ, 7), Entry(USER, X, USER_ID), Entry(GROUP_OBJ, 5),
               Entry(MASK, 5), Entry(OTHER, 5)]  # fmt: skip
    home = with_acl(tmp_path / "home", granted)
    make_private(home)
    entries = read_acl(home)
    assert effective(entries, USER_ID) == X
    assert {e.tag: e.perm for e in entries if e.tag in (USER_OBJ, GROUP_OBJ, OTHER)} == {
        USER_OBJ: 7,
        GROUP_OBJ: 0,
        OTHER: 0,
    }
