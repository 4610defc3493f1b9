#!/usr/bin/env bash
# Ship a finished tier of rb3's references from computing/rb3/<tier>/references/: copy the
# default and tuned columns and the choices into baselines/references/rb3/<tier>/, measure the
# references' lab (LAB.json) and write the manifest; then pin the SHA-256 it prints in
# baselines/lib/protocol.py (REFERENCE_MANIFESTS) and write the leaderboard (the last lines).
#
#   computing/rb3/ship.sh TIER
set -euo pipefail
cd "$(dirname "$0")/../.."
tier=${1:?usage: ship.sh TIER}
PY=${PY:-.venv/bin/python}
src=computing/rb3/$tier/references
dest=baselines/references/rb3/$tier
mkdir -p "$dest"
cp "$src"/*.jsonl "$src"/*+tuned.json "$dest"/  # --write-manifest compacts them
$PY -m baselines benchmark references --protocol rb3 --tier "$tier" --write-manifest
echo "then: pin it, and"
echo "  $PY -m baselines benchmark leaderboard --protocol rb3 --tier $tier --out /tmp/lb && cp /tmp/lb/rb3/$tier/LEADERBOARD.md $dest/"
