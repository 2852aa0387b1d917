#!/usr/bin/env bash
# Set up, then run every check CI runs: ruff, mypy, and the whole pytest suite (all markers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
ruff check src tests bench
mypy
pytest "$@"
