#!/usr/bin/env bash
# Set up a development/CI machine: a JDK for PySpark (Debian package, when `java` is missing),
# Debian's ZooKeeper server (when missing)
# and the project with all its extras in .venv at the repo root. Safe to run again: it only
# reinstalls Python packages when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
    echo "setup: installing a JDK (openjdk-17-jre-headless) for PySpark" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

if [ ! -f /usr/share/java/zookeeper.jar ]; then
    echo "setup: installing ZooKeeper (Debian's zookeeper package) for ZooKeeper-mode clusters and KIP-866" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    "$PY" -m venv .venv
fi

stamp=.venv/.kraftwerk-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing kraftwerk and its dependencies into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>/dev/null || true
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[spark,test]"
    echo "$want" > "$stamp"
fi
