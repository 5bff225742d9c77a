"""Paths a user gives: input files opened only when they are regular files, output folders checked before any
work starts."""

from __future__ import annotations

import errno
import os
import stat
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
    """`path` when it is, or can be created as, a folder this process may write into; otherwise an InputError
    naming `flag` (an existing file, /dev/null, a file on the way, a read-only folder)."""
    path = Path(path)
    try:
        return _check_output_dir(flag, path)
    except OSError as err:  # a name over 255 bytes, a path over 4096 (ENAMETOOLONG), a loop of links
        raise InputError([Problem(flag, _short(str(path)), f"expected a folder path this system can create "
                                  f"({err.strerror or err})")]) from None


def _short(text: str) -> str:
    return text if len(text) <= 120 else f"{text[:100]}… ({len(text)} characters)"


def _check_output_dir(flag: str, path: Path) -> Path:
    if path.exists() and not path.is_dir():
        raise InputError([Problem(flag, str(path), "expected a folder to write into; this is an existing file")])
    parent = path
    while not parent.exists():  # the nearest existing folder decides whether mkdir can succeed
        if parent.parent == parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise InputError([Problem(flag, str(path), f"expected a folder to write into; {parent} is a file")])
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError([Problem(flag, str(path), f"expected a folder to write into; {parent} is not writable")])
    return path
