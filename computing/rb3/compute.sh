#!/usr/bin/env bash
# Compute (or resume) rb3's references of one tier into computing/rb3/<tier>/: per method its
# default column (benchmark references --compute), then its tuned column (benchmark tune: the
# search, the choice, the tuned runs). Every step is resumable: runs already in the files are
# kept, so an interrupted computation goes on where it stopped. Commit the folder as runs finish
# (a machine may not outlive the computation); ship a finished tier with ship.sh.
#
#   computing/rb3/compute.sh TIER [WORKERS] [METHOD ...]    (default: all the tier's methods)
set -uo pipefail
cd "$(dirname "$0")/../.."
tier=${1:?usage: compute.sh TIER [WORKERS] [METHOD ...]}
workers=${2:-2}
shift $(( $# > 1 ? 2 : 1 ))
here=computing/rb3/$tier
PY=${PY:-.venv/bin/python}
if [ $# -eq 0 ]; then
  mapfile -t methods < <($PY -c "
from baselines.lib import protocol
p = protocol.load_protocol('rb3')
print('\n'.join(p.references_of('$tier')))")
else
  methods=("$@")
fi
for m in "${methods[@]}"; do
  echo "=== $(date -u +%T) $tier $m default"
  $PY -m baselines benchmark references --protocol rb3 --tier "$tier" --compute --methods "$m" \
    --references-dir "$here/references" --out "$here/out" --workers "$workers" --no-progress \
    || echo "FAILED $tier $m default"
  echo "=== $(date -u +%T) $tier $m tune"
  $PY -m baselines benchmark tune --protocol rb3 --tier "$tier" --method "$m" \
    --references-dir "$here/references" --out "$here/out" --workers "$workers" --no-progress \
    || echo "FAILED $tier $m tune"
done
echo "=== $(date -u +%T) done"
