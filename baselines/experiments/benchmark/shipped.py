"""Every shipped reference tier, read verified: what the site and ``runs export`` show."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import manifest, tuning
from baselines.experiments.benchmark.reading import load_references
from baselines.lib import protocol as protocols


@dataclass(frozen=True)
class ShippedTier:
    """A protocol tier's shipped references: its protocol, name, the opened (verified)
    references, their default column's rows and their tuned column's rows, by method."""

    protocol: protocols.Protocol
    name: str
    refs: manifest.References
    found: dict[str, list[dict[str, Any]]]
    tuned: dict[str, list[dict[str, Any]]]

    @property
    def slug(self) -> str:
        """``<version>-<tier>``: a name for its files."""
        return f"{self.protocol.version}-{self.name}"


def shipped_tiers(versions: list[str]) -> list[ShippedTier]:
    """Every tier with pinned references (of ``versions``, all when empty), read verified
    (:class:`~.manifest.UnverifiedReferences` on a changed file: nothing is read past it)."""
    known = protocols.REFERENCE_MANIFESTS
    unknown = sorted(set(versions) - set(known))
    if unknown:
        raise ValueError(f"--protocols {unknown}: no shipped references (known: {sorted(known)})")
    out = []
    for version in sorted(known):
        if versions and version not in versions:
            continue
        protocol = protocols.load_protocol(version)
        for name in known[version]:
            refs = manifest.open_references(protocol, name)
            with tempfile.TemporaryDirectory() as configs:
                found = load_references(protocol, name, refs, Path(configs))
                tuned = tuning.load_tuned_references(protocol, name, refs, Path(configs))
            out.append(ShippedTier(protocol, name, refs, found, tuned))
    return out
