#!/usr/bin/env bash
# Set up, then run every check CI runs: ruff, mypy, and the whole pytest suite (all markers), then
# the tests of the modules that have a compiled twin again on the pure-Python path (KRAFTWERK_PURE=1,
# see src/kraftwerk/native.py). Given test paths, only those run, once, on the default path.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
ruff check src tests bench
mypy
pytest "$@"
for arg in "$@"; do
    # a test path (tests/x.py, tests/x.py::test_y, a directory) makes it a targeted run: no second
    # pass; option values such as the "no:cacheprovider" of "-p no:cacheprovider" are not paths
    if [ -e "${arg%%::*}" ]; then exit 0; fi
done
KRAFTWERK_PURE=1 pytest "$@" tests/test_native.py tests/records tests/protocol tests/image
