"""Private directories, and POSIX ACLs that let one other user through one.

As root the embedded PostgreSQL runs as a user of its own, which must reach its data
directory inside a home only root may enter. Rather than opening the home (or any
directory above it) to everyone, such a directory gets one ACL entry letting that user
alone traverse it. The ACL is written as the kernel's extended attribute, so no ``setfacl``
is needed.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass, replace
from pathlib import Path

from ledger.errors import ServiceError

XATTR = "system.posix_acl_access"
DEFAULT_XATTR = "system.posix_acl_default"  # what files made inside inherit, over the umask
VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
NO_ID = 0xFFFFFFFF
X = 1  # the execute (traverse) bit of an entry
_ENTRY = struct.Struct("<HHI")
_HEADER = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class Entry:
    tag: int
    perm: int
    id: int = NO_ID


def read_acl(path: Path) -> list[Entry]:
    """The directory's access ACL; one made of its mode bits when it has none."""
    try:
        raw = os.getxattr(path, XATTR) if hasattr(os, "getxattr") else b""
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        raw = b""
    if raw:
        return [Entry(*e) for e in _ENTRY.iter_unpack(raw[_HEADER.size :])]
    mode = path.stat().st_mode
    return [Entry(USER_OBJ, mode >> 6 & 7), Entry(GROUP_OBJ, mode >> 3 & 7), Entry(OTHER, mode & 7)]


def write_acl(path: Path, entries: list[Entry]) -> None:
    """Set the ACL (the group bits of the mode become its mask)."""
    order = {tag: i for i, tag in enumerate((USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER))}
    entries = sorted(entries, key=lambda e: (order[e.tag], e.id))
    raw = _HEADER.pack(VERSION) + b"".join(_ENTRY.pack(e.tag, e.perm, e.id) for e in entries)
    try:
        os.setxattr(path, XATTR, raw)
    except (AttributeError, OSError) as exc:
        raise ServiceError(
            "cannot give the embedded PostgreSQL's user its way through this directory: the"
            " file system takes no POSIX ACLs. Run memledger as a user other than root, put"
            " MEMLEDGER_HOME on a file system with ACLs, or set MEMLEDGER_DATABASE_URL",
            path=str(path),
            error=str(exc),
        ) from exc


def make_private(path: Path) -> None:
    """Only the owner (and users an ACL entry names) may enter ``path``: group and others
    lose every permission; the owner keeps rwx; a named user or group keeps what it may do
    now (its entry under the mask), never more. A default ACL is dropped, so that files
    made inside get the mode their maker asks for."""
    _drop_default(path)
    entries = read_acl(path)
    if not any(e.tag in (USER, GROUP) for e in entries):
        os.chmod(path, stat.S_IMODE(path.stat().st_mode) & ~0o077 | 0o700)
        return
    mask = next((e.perm for e in entries if e.tag == MASK), 7)
    private = [_private_entry(e, mask) for e in entries if e.tag != MASK]
    write_acl(path, [*private, Entry(MASK, _group_class_union(private))])


def _drop_default(path: Path) -> None:
    try:
        if hasattr(os, "removexattr"):
            os.removexattr(path, DEFAULT_XATTR)
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise


def _private_entry(e: Entry, mask: int) -> Entry:
    if e.tag == USER_OBJ:
        return replace(e, perm=7)
    return replace(e, perm=0 if e.tag in (GROUP_OBJ, OTHER) else e.perm & mask)


def grant_traversal(path: Path, uid: int, gids: list[int]) -> bool:
    """Let user ``uid`` (in groups ``gids``) traverse ``path`` with one ACL entry, unless
    it already may; no one else gains anything. True if an entry was added."""
    entries = read_acl(path)
    st = path.stat()
    if _may_traverse(entries, st, uid, gids):
        return False
    old_mask = next((e.perm for e in entries if e.tag == MASK), None)
    if old_mask is None:
        old_mask = next(e.perm for e in entries if e.tag == GROUP_OBJ)
    # what others of the group class may do stays as it was under the old mask
    kept = [
        replace(e, perm=e.perm & old_mask) if e.tag in (GROUP_OBJ, GROUP, USER) else e
        for e in entries
        if e.tag != MASK and not (e.tag == USER and e.id == uid)
    ]
    mine = next((e.perm for e in entries if e.tag == USER and e.id == uid), 0)
    kept.append(Entry(USER, mine | X, uid))
    write_acl(path, [*kept, Entry(MASK, _group_class_union(kept))])
    return True


def _group_class_union(entries: list[Entry]) -> int:
    perm = 0
    for e in entries:
        if e.tag in (USER, GROUP_OBJ, GROUP):
            perm |= e.perm
    return perm


def _may_traverse(entries: list[Entry], st: os.stat_result, uid: int, gids: list[int]) -> bool:
    """POSIX ACL access check for the execute bit (as the kernel does it)."""
    if uid == st.st_uid:
        return bool(st.st_mode & stat.S_IXUSR)
    mask = next((e.perm for e in entries if e.tag == MASK), 7)
    named = [e for e in entries if e.tag == USER and e.id == uid]
    if named:
        return bool(named[0].perm & mask & X)
    groups = [
        e
        for e in entries
        if (e.tag == GROUP_OBJ and st.st_gid in gids) or (e.tag == GROUP and e.id in gids)
    ]
    if groups:
        return any(e.perm & mask & X for e in groups)
    return bool(st.st_mode & stat.S_IXOTH)
