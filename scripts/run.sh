#!/usr/bin/env bash
# The main job on the embedded default: set up, then bring up a local cluster of real processes
# (3 controllers + 3 brokers on loopback), show its status and finalized features, scan its log dirs
# with the Spark pipeline on local[*], and stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
DIR="${KRAFTWERK_DIR:-$PWD/.kraftwerk/cluster}"
if [ -f "$DIR/cluster.json" ]; then
  kraftwerk cluster down --dir "$DIR" >/dev/null 2>&1 || true
fi
rm -rf "$DIR"
mkdir -p "$(dirname "$DIR")"
trap 'echo; echo "\$ kraftwerk cluster down --dir $DIR"; kraftwerk cluster down --dir "$DIR"' EXIT
echo "\$ kraftwerk cluster up --dir $DIR --controllers 3 --brokers 3"
kraftwerk cluster up --dir "$DIR" --controllers 3 --brokers 3 | tee "$DIR.up"
BOOTSTRAP="$(tail -n 1 "$DIR.up")"
rm -f "$DIR.up"
echo
echo "\$ kraftwerk cluster status --dir $DIR"
kraftwerk cluster status --dir "$DIR"
echo
echo "\$ kraftwerk features --bootstrap-server $BOOTSTRAP describe"
kraftwerk features --bootstrap-server "$BOOTSTRAP" describe
echo
echo "\$ kraftwerk pipeline scan --log-dirs $DIR/node-*/data --out $DIR/scan    # Spark, local[*]"
kraftwerk pipeline scan --log-dirs "$DIR"/node-*/data --out "$DIR/scan"
