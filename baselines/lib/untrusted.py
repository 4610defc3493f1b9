"""Reading untrusted files as data: bounded in size, depth and time, one line per refusal.

A submitted bundle, a file someone sent, a path on the command line may be huge, a device
(``/dev/zero`` never ends), a FIFO (blocks for ever), a symlink to somewhere else, or JSON nested
200,000 levels deep (Python's parser then raises ``RecursionError``). Everything here is checked
before it is opened or parsed, in time linear in the bytes read, and every refusal is a
:class:`Refused` (a ``ValueError``) of one line naming what and the limit.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from routine_envs.plugins import json_depth

MAX_JSON_DEPTH = 64
"""How deep ``[`` and ``{`` may nest in an untrusted JSON document."""


class Refused(ValueError):
    """An untrusted input refused: the message is one line naming it and the limit."""


def read_regular_file(path: Path, limit: int, what: str) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes (checked before
    opening, without following a symlink, and again on the open descriptor, so a device, a FIFO
    or a file swapped meanwhile is never read); ``what`` names it in the refusal (``--bundle
    x.zip``)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as err:
        raise Refused(f"{what}: cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(mode):
        kind = (
            "a symbolic link"
            if stat.S_ISLNK(mode)
            else "a folder"
            if stat.S_ISDIR(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device or socket"
        )
        raise Refused(f"{what}: is {kind}, not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise Refused(f"{what}: cannot be read ({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{what}: is not a regular file")
        if info.st_size > limit:
            raise Refused(f"{what}: {info.st_size:,} bytes, more than the {limit:,} allowed")
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew while read
        raise Refused(f"{what}: more than the {limit:,} bytes allowed")
    return data


def check_json_text(
    data: bytes, what: str, limit: int, max_depth: int = MAX_JSON_DEPTH, lines: bool = False
) -> str:
    """``data`` as UTF-8 text if it is at most ``limit`` bytes and nests at most ``max_depth``
    levels (one JSON document, or with ``lines`` each line of JSON lines): what may then be
    given to ``json.loads``."""
    if len(data) > limit:
        raise Refused(f"{what}: {len(data):,} bytes, more than the {limit:,} allowed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Refused(f"{what}: not UTF-8 text (byte {err.start})") from None
    depth = max(map(json_depth, text.split("\n") if lines else [text]), default=0)
    if depth > max_depth:
        raise Refused(f"{what}: JSON nested {depth} levels deep, more than the {max_depth} allowed")
    return text


def loads(data: bytes, what: str, limit: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """One JSON document from untrusted ``data`` (:func:`check_json_text`), NaN and infinities
    refused."""
    text = check_json_text(data, what, limit, max_depth)

    def constant(name: str) -> Any:
        raise Refused(f"{what}: {name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=constant)
    except Refused:
        raise
    except ValueError as err:
        raise Refused(f"{what}: not JSON ({str(err)[:120]})") from None
