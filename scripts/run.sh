#!/usr/bin/env bash
# The main job on the embedded default: set up, then rehearse the metadata.version lifecycle on a
# new local cluster of real processes (3 controllers + 3 brokers on loopback): formatted at 3.9 on
# 3.9 software, rolled to this software, the upgrade's pre-flight, the online upgrade, a check that
# every node converged, the downgrades, then a Spark job (local[*]) over the nodes' metadata logs
# printing the feature-level history. Extra arguments go to `kraftwerk cluster rehearse` (e.g.
# --output json, --keep, --verbose).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
DIR="${KRAFTWERK_DIR:-$PWD/.kraftwerk/rehearsal}"
if [ -f "$DIR/cluster.json" ]; then
  kraftwerk cluster down --dir "$DIR" >/dev/null 2>&1 || true
fi
rm -rf "$DIR"
mkdir -p "$(dirname "$DIR")"
echo "\$ kraftwerk cluster rehearse --dir $DIR $*" >&2
kraftwerk cluster rehearse --dir "$DIR" "$@"
