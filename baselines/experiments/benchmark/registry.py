"""The submissions registry: ``submissions/<protocol>/<tier>/<name>/`` in the repository, one
folder per submission sent by pull request, read as untrusted data.

Each entry folder holds exactly two files:

- ``submission.zip``: the bundle ``benchmark submit`` wrote (:mod:`~.submission`), at most
  :data:`MAX_BUNDLE_BYTES`;
- ``ENTRY.json``: what a maintainer needs beside it, at most :data:`MAX_ENTRY_BYTES`:
  ``{"format": "routine-envs registry entry 1", "submitter": "Jane Doe", "date":
  "2026-12-05", "link": "https://..." or null}`` (who sent it, the day they sent it, where
  the method is described); no other key.

The registry's root may hold a ``README.md`` beside the protocol folders; nothing else is
allowed anywhere (no other file, no symbolic link, no hidden file), names are plain lowercase
(:data:`NAME`), a protocol folder is a protocol this checkout has and a tier folder one of its
tiers, the bundle's own protocol and tier must be its folder's, and one protocol tier lists a
method once. Listing is bounded (:data:`MAX_ENTRIES`, :data:`MAX_LISTED` names per folder);
every refusal is one line naming the entry (:class:`InvalidEntry`). Nothing here verifies a
bundle's scores: :mod:`~.registry_verification` does.
"""

from __future__ import annotations

import datetime
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from baselines.lib import untrusted

ENTRY_FORMAT = "routine-envs registry entry 1"
BUNDLE = "submission.zip"
ENTRY = "ENTRY.json"
README = "README.md"
DEFAULT_ROOT = Path(__file__).resolve().parents[3] / "submissions"
"""The registry of a checkout (absent from an installed package)."""
MAX_BUNDLE_BYTES = 20_000_000
"""A registered bundle larger than this is refused unread (the full tier's bundle of one method
is about 4 MB; the repository keeps every registered byte)."""
MAX_ENTRY_BYTES = 4_096
MAX_ENTRIES = 500
"""Entries the registry may hold in all."""
MAX_LISTED = 1_000
"""Names one folder of the registry may hold (listing stops past it)."""
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
"""An entry's, a protocol's or a tier's folder name: lowercase letters, digits, ``-`` and
``_``, at most 63 characters, starting with a letter or digit (no ``..``, no hidden file, no
two names that differ by case only)."""
TEXT = re.compile(r"[^\x00-\x1f\x7f]{1,100}")
"""The submitter's name: 1 to 100 characters, no control character (no line break)."""
MAX_LINK = 300
FIRST_DATE = datetime.date(2024, 1, 1)


class InvalidEntry(ValueError):
    """A registry folder or entry that is not as the layout says: one line naming it."""


@dataclass(frozen=True)
class Entry:
    """One registered submission: where it is and what its ``ENTRY.json`` says.

    Attributes:
        protocol, tier, name: its folder's three names.
        folder: ``<root>/<protocol>/<tier>/<name>``.
        submitter: who sent it (at most 100 characters).
        date: the day it was sent (``YYYY-MM-DD``).
        link: an ``https://`` address describing the method, or ``None``.
    """

    protocol: str
    tier: str
    name: str
    folder: Path
    submitter: str
    date: str
    link: str | None

    @property
    def where(self) -> str:
        """``<protocol>/<tier>/<name>``: how every message names the entry."""
        return f"{self.protocol}/{self.tier}/{self.name}"

    @property
    def bundle(self) -> Path:
        return self.folder / BUNDLE


def listed(folder: Path, where: str) -> list[os.DirEntry[str]]:
    """The names in ``folder`` (at most :data:`MAX_LISTED`), sorted; ``InvalidEntry`` when it
    cannot be listed or holds more."""
    out = []
    try:
        with os.scandir(folder) as items:
            for item in items:
                out.append(item)
                if len(out) > MAX_LISTED:
                    raise InvalidEntry(f"{where}: more than {MAX_LISTED} names in one folder")
    except OSError as err:
        raise InvalidEntry(f"{where}: cannot be listed ({err.strerror or err})") from None
    return sorted(out, key=lambda item: item.name)


def is_folder(item: os.DirEntry[str]) -> bool:
    """A real folder (a symbolic link to one is not)."""
    return item.is_dir(follow_symlinks=False)


def check_name(name: str, where: str, what: str) -> None:
    if not NAME.fullmatch(name):
        raise InvalidEntry(
            f"{where}: {what} name {name[:80]!r} is not lowercase letters, digits, '-' and '_' "
            "(at most 63, starting with a letter or digit)"
        )


def entry_folders(root: Path) -> list[tuple[str, Path | InvalidEntry]]:
    """Every entry folder of the registry at ``root`` as ``(where, folder)``, or ``(where,
    InvalidEntry)`` for a name the layout does not allow (listed, not skipped); ``InvalidEntry``
    for a root that is not a folder or holds more than :data:`MAX_ENTRIES` entries."""
    from baselines.lib import protocol as protocols

    if not root.is_dir() or root.is_symlink():
        raise InvalidEntry(f"--submissions {str(root)[:200]}: not a folder")
    known = protocols.known_versions()
    out: list[tuple[str, Path | InvalidEntry]] = []
    for top in listed(root, str(root)[:200]):
        if top.name == README and top.is_file(follow_symlinks=False):
            continue
        try:
            check_name(top.name, top.name[:80], "protocol")
            if not is_folder(top):
                raise InvalidEntry(f"{top.name}: not a folder (a protocol's folder expected)")
            if top.name not in known:
                raise InvalidEntry(f"{top.name}: no protocol of that version (known: {known})")
        except InvalidEntry as err:
            out.append((top.name[:80], err))
            continue
        tiers = protocols.load_protocol(top.name).tiers
        for middle in listed(Path(top.path), top.name):
            where = f"{top.name}/{middle.name[:80]}"
            try:
                check_name(middle.name, where, "tier")
                if not is_folder(middle) or middle.name not in tiers:
                    raise InvalidEntry(f"{where}: not a tier folder of {top.name} ({list(tiers)})")
            except InvalidEntry as err:
                out.append((where, err))
                continue
            for leaf in listed(Path(middle.path), where):
                here = f"{where}/{leaf.name[:80]}"
                try:
                    check_name(leaf.name, here, "entry")
                    if not is_folder(leaf):
                        raise InvalidEntry(f"{here}: not a folder (an entry's folder expected)")
                except InvalidEntry as err:
                    out.append((here, err))
                    continue
                out.append((here, Path(leaf.path)))
                if len(out) > MAX_ENTRIES:
                    raise InvalidEntry(f"{root}: more than {MAX_ENTRIES} entries")
    return out


def entry_fields(data: Any, where: str) -> tuple[str, str, str | None]:
    """``(submitter, date, link)`` of an ``ENTRY.json`` value; ``InvalidEntry`` naming the
    first field that is missing, extra or malformed."""
    wanted = {"format", "submitter", "date", "link"}
    if not isinstance(data, dict) or data.get("format") != ENTRY_FORMAT:
        raise InvalidEntry(f"{where}: {ENTRY} is not a {ENTRY_FORMAT!r} object")
    if set(data) != wanted:
        odd = sorted(set(data) ^ wanted)
        raise InvalidEntry(f"{where}: {ENTRY} has keys {sorted(data)[:8]}, not {sorted(wanted)} "
                           f"({odd[0][:40]!r} differs)")  # fmt: skip
    submitter, date, link = data["submitter"], data["date"], data["link"]
    if not isinstance(submitter, str) or not TEXT.fullmatch(submitter) or not submitter.strip():
        raise InvalidEntry(f"{where}: {ENTRY} submitter is not 1 to 100 characters on one line")
    try:
        day = (
            datetime.date.fromisoformat(date) if isinstance(date, str) and len(date) == 10 else None
        )
    except ValueError:
        day = None
    if day is None or not FIRST_DATE <= day <= datetime.date.today() + datetime.timedelta(days=1):
        raise InvalidEntry(
            f"{where}: {ENTRY} date {str(date)[:20]!r} is not a day (YYYY-MM-DD) between "
            f"{FIRST_DATE} and today"
        )
    if link is not None and not is_https(link):
        raise InvalidEntry(
            f"{where}: {ENTRY} link is not null or an https:// address of at most {MAX_LINK} "
            "characters"
        )
    return submitter, date, link


def is_https(link: Any) -> bool:
    """Whether ``link`` is an ``https://host/...`` address without spaces, quotes or angle
    brackets, of at most :data:`MAX_LINK` characters (safe to put in an ``href``)."""
    if not isinstance(link, str) or len(link) > MAX_LINK or re.search(r"[\s\"'<>\\`]", link):
        return False
    try:
        parts = urlsplit(link)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.hostname) and not parts.username


def read_entry(folder: Path, where: str) -> Entry:
    """The entry in ``folder`` (``where``: ``<protocol>/<tier>/<name>``), its files checked:
    exactly ``ENTRY.json`` and ``submission.zip``, both regular files within their caps;
    ``InvalidEntry`` (one line) otherwise. The bundle is not opened here."""
    names = {}
    for item in listed(folder, where):
        mode = item.stat(follow_symlinks=False).st_mode
        if item.name not in (ENTRY, BUNDLE):
            raise InvalidEntry(f"{where}: unexpected {item.name[:80]!r} (an entry holds only "
                               f"{ENTRY} and {BUNDLE})")  # fmt: skip
        if not stat.S_ISREG(mode):
            raise InvalidEntry(f"{where}: {item.name} is not a regular file")
        names[item.name] = item.stat(follow_symlinks=False).st_size
    for name in (ENTRY, BUNDLE):
        if name not in names:
            raise InvalidEntry(f"{where}: no {name}")
    if names[BUNDLE] > MAX_BUNDLE_BYTES:
        raise InvalidEntry(
            f"{where}: {BUNDLE} is {names[BUNDLE]:,} bytes, more than the {MAX_BUNDLE_BYTES:,} "
            "a registered bundle may hold"
        )
    try:
        data = untrusted.read_regular_file(folder / ENTRY, MAX_ENTRY_BYTES, f"{where}: {ENTRY}")
        value = untrusted.loads(data, f"{where}: {ENTRY}", MAX_ENTRY_BYTES)
    except untrusted.Refused as err:
        raise InvalidEntry(str(err)) from None
    submitter, date, link = entry_fields(value, where)
    protocol, tier, name = where.split("/")
    return Entry(protocol, tier, name, folder, submitter, date, link)


def bundle_fields(entry: Entry) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The bundle's members (read as :func:`~.submission.read` reads any bundle) and its
    manifest's typed fields (:func:`~.verification.manifest_fields`), checked to be the
    entry's folder's protocol and tier; ``InvalidEntry`` otherwise."""
    from baselines.experiments.benchmark import submission, verification

    where = entry.where
    try:
        untrusted.read_regular_file(entry.bundle, MAX_BUNDLE_BYTES, f"{where}: {BUNDLE}")
        members = submission.read(entry.bundle)
        manifest = submission.json_member(members, "SUBMISSION.json")
        fields = verification.manifest_fields(manifest, where)
    except (untrusted.Refused, submission.InvalidSubmission) as err:
        message = str(err).replace(f"--bundle {str(entry.bundle)[:200]}", f"{where}: {BUNDLE}")
        raise InvalidEntry(message) from None
    made_for = f"{fields['version'][:40]}/{fields['tier'][:40]}"
    if made_for != f"{entry.protocol}/{entry.tier}":
        raise InvalidEntry(
            f"{where}: the bundle is a submission to {made_for}, not to its folder's "
            f"{entry.protocol}/{entry.tier}"
        )
    return members, fields


def same_method(fields: dict[str, Any]) -> tuple[str, str, str, str]:
    """What makes two entries the same row of a leaderboard: protocol, tier, trainer and the
    method spec with its JSON arguments in canonical form."""
    import json

    from routine_envs import plugins

    spec = plugins.parse_spec(fields["method"], "method")
    method = f"{spec.target}{json.dumps(spec.kwargs, sort_keys=True)}"
    return fields["version"], fields["tier"], fields["trainer"], method
