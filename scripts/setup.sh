#!/usr/bin/env bash
# Set up a development/CI machine: a JDK for PySpark (Debian package, when `java` is missing), the
# C toolchain and zlib headers for the compiled twins (when missing), Debian's ZooKeeper server (when
# missing), and the project with all its extras in .venv at the repo root. Safe to run again: it only
# reinstalls Python packages when pyproject.toml, setup.py or a Cython source changed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
apt_updated=""
apt_install() {
    if [ -z "$apt_updated" ]; then
        $SUDO apt-get update -qq
        apt_updated=1
    fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v java >/dev/null 2>&1; then
    echo "setup: installing a JDK (openjdk-17-jre-headless) for PySpark" >&2
    apt_install openjdk-17-jre-headless
fi
if ! command -v gcc >/dev/null 2>&1 || [ ! -f /usr/include/zlib.h ]; then
    echo "setup: installing gcc and zlib headers for the compiled twins" >&2
    apt_install gcc zlib1g-dev
fi

if [ ! -f /usr/share/java/zookeeper.jar ]; then
    echo "setup: installing ZooKeeper (Debian's zookeeper package) for ZooKeeper-mode clusters and KIP-866" >&2
    apt_install --no-install-recommends zookeeper
fi

if ! command -v chromium >/dev/null 2>&1; then
    # the readiness page's browser test drives Debian's Chromium (Playwright downloads no browser)
    echo "setup: installing Debian's chromium for the page tests" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    "$PY" -m venv .venv
fi

stamp=.venv/.kraftwerk-installed
# the Cython sources count too: the editable install builds the compiled twins in place
want=$(cat pyproject.toml setup.py $(find src -name '*.pyx' | sort) | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "setup: installing kraftwerk and its dependencies into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip 2>/dev/null || true
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[spark,test]"
    echo "$want" > "$stamp"
fi
