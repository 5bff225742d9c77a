"""Paths a user gives: input files opened only when they are regular files, output folders checked before any
work starts."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from validation.errors import InputError, Problem


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path: str | Path) -> BinaryIO:
    """`path` opened for binary reading when it is a regular file; otherwise OSError whose strerror says what it
    is. Opened without blocking, so a FIFO with no writer is refused at once instead of hanging the command, and a
    device (/dev/zero, /dev/urandom) is refused before a byte of it is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = next((name for test, name in _KINDS if test(mode)), "a special file")
            raise OSError(errno.EINVAL, f"not a regular file but {what}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_output_dir(flag: str, path: Path) -> Path:
    """`path` when it is, or can be created as, a folder this process can write a file into; otherwise an
    InputError naming `flag` (an existing file, /dev/null, a file on the way, a read-only folder, a pseudo-filesystem
    such as /proc or /sys that refuses new files even to root). Checked by doing it: the missing folders are
    created and a temporary file is written in the last, then both are removed again, so a check leaves nothing
    behind (an access() check alone passes everything for root)."""
    path = Path(path)
    try:
        return _check_output_dir(flag, path)
    except OSError as err:  # a name over 255 bytes, a path over 4096 (ENAMETOOLONG), a loop of links
        raise InputError([Problem(flag, _short(str(path)), f"expected a folder path this system can create "
                                  f"({err.strerror or err})")]) from None


def _short(text: str) -> str:
    return text if len(text) <= 120 else f"{text[:100]}… ({len(text)} characters)"


def _kind(path: Path) -> str:
    """'folder', 'missing' or 'file' from one stat (exists() then is_dir() could see a folder that another
    command's probe removes in between)."""
    try:
        return "folder" if stat.S_ISDIR(path.stat().st_mode) else "file"
    except (FileNotFoundError, NotADirectoryError):  # NotADirectory: a file on the way, found by the walk up
        return "missing"


def _check_output_dir(flag: str, path: Path) -> Path:
    if _kind(path) == "file":
        raise InputError([Problem(flag, str(path), "expected a folder to write into; this is an existing file")])
    parent = path
    while _kind(parent) == "missing":  # the nearest existing folder decides whether mkdir can succeed
        if parent.parent == parent:
            break
        parent = parent.parent
    if _kind(parent) == "file":
        raise InputError([Problem(flag, str(path), f"expected a folder to write into; {parent} is a file")])
    _probe_write(flag, path)  # whether it can be written into: tried (access() says yes to root everywhere)
    return path


# Tries of the write probe when a folder vanished on the way: each racing command removes only the folders it
# created, so a retry usually succeeds; three were too few for six commands probing one folder at once under load.
PROBE_ATTEMPTS = 20


def _probe_write(flag: str, path: Path) -> None:
    """Create `path` (and the folders above it that are missing) and a temporary file in it, then remove what
    was created; InputError naming `flag` when any step fails. Tried again when a folder vanished on the way
    (ENOENT): two commands probing one new --cache-dir at once may remove each other's folder."""
    for attempt in range(PROBE_ATTEMPTS):
        try:
            return _try_write(path)
        except OSError as err:
            if err.errno == errno.ENOENT and attempt < PROBE_ATTEMPTS - 1:
                continue
            doing = getattr(err, "doing", f"writing a file in {path}")
            raise InputError([Problem(flag, _short(str(path)), f"expected a folder this process can write into; "
                                      f"{doing} failed ({err.strerror or err})")]) from None


def _try_write(path: Path) -> None:
    created: list[Path] = []
    step = path
    while not step.exists() and step.parent != step:
        created.append(step)
        step = step.parent
    doing = ""
    try:
        for folder in reversed(created):
            doing = f"creating {folder}"
            try:
                os.mkdir(folder)
            except FileExistsError:  # made meanwhile by another command (a file there: the write below fails)
                pass
        doing = f"writing a file in {path}"
        fd, name = tempfile.mkstemp(prefix=".kserve-preflight-probe-", dir=path)
        os.close(fd)
        os.unlink(name)
    except OSError as err:
        err.doing = doing  # type: ignore[attr-defined]
        raise
    finally:
        for folder in created:  # deepest first; a folder something else filled meanwhile stays
            try:
                folder.rmdir()
            except OSError:
                pass
