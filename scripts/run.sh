#!/usr/bin/env bash
# The main job on the embedded default: set up, then show what kraftwerk does on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
kraftwerk --help
echo
echo "\$ kraftwerk storage version-mapping"
kraftwerk storage version-mapping
