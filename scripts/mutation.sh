#!/usr/bin/env bash
# Mutation testing (mutmut) of one core module, or of every listed core one after another, each
# against its own tests. Not part of the default test run: it is CPU-heavy (one pytest run per
# mutant) and runs niced. Prints each module's score; docs/testing.md holds the current ones.
#
#   scripts/mutation.sh                       # every core below, one at a time
#   scripts/mutation.sh records/batch.py      # one module
#   JOBS=1 scripts/mutation.sh image/writer.py
#
# Each run works in .mutation/<module>/ (a scratch copy of src, tests and bench, where mutmut keeps
# its mutants/ and results); the tree itself is never modified. The memory test of the deep scan is
# left out of the batch module's selection: mutmut's instrumentation changes what it measures.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# module (under src/kraftwerk) -> the tests that own it
declare -A TESTS=(
    [broker/replica.py]="tests/broker/test_replica.py tests/runtime/test_data_plane.py"
    [controller/features.py]="tests/controller"
    [image/writer.py]="tests/image --ignore=tests/image/test_pmap.py"
    [raft/roles/candidate.py]="tests/raft"
    [raft/roles/follower.py]="tests/raft"
    [raft/roles/leader.py]="tests/raft"
    [raft/roles/resigned.py]="tests/raft"
    [raft/roles/unattached.py]="tests/raft"
    [records/batch.py]="tests/records --deselect tests/records/test_scan.py::test_deep_scan_memory_is_one_batch_not_the_buffer"
    [records/legacy.py]="tests/records --deselect tests/records/test_scan.py::test_deep_scan_memory_is_one_batch_not_the_buffer"
    [records/recovery.py]="tests/records --deselect tests/records/test_scan.py::test_deep_scan_memory_is_one_batch_not_the_buffer"
)
CORES=(broker/replica.py controller/features.py image/writer.py records/batch.py records/legacy.py records/recovery.py
       raft/roles/candidate.py raft/roles/follower.py raft/roles/leader.py raft/roles/resigned.py
       raft/roles/unattached.py)

if [ ! -x .venv/bin/mutmut ]; then
    scripts/setup.sh
fi
export PATH="$ROOT/.venv/bin:$PATH"
export HYPOTHESIS_PROFILE=mutation  # tests/conftest.py: derandomized, no shrinking

run_one() {
    local module=$1
    local tests=${TESTS[$module]:-}
    if [ -z "$tests" ]; then
        echo "mutation: no test selection for $module (known: ${CORES[*]})" >&2
        return 2
    fi
    local work="$ROOT/.mutation/${module//\//_}"
    rm -rf "$work"
    mkdir -p "$work"
    cp -r src tests bench pyproject.toml "$work/"  # tests/ brings tests/data/kafka, Kafka's bytes
    # mutmut reads [tool.mutmut] first; this copy must use the setup.cfg written below
    python - "$work/pyproject.toml" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
open(path, "w").write(re.sub(r"\n\[tool\.mutmut\][^\[]*", "\n", text))
EOF
    {
        echo "[mutmut]"
        echo "source_paths=src/"
        echo "only_mutate=src/kraftwerk/$module"
        echo "pytest_add_cli_args=-p no:cacheprovider -q -x"
        echo "pytest_add_cli_args_test_selection="
        for t in $tests; do echo "    $t"; done
    } > "$work/setup.cfg"
    echo "mutation: $module against $tests" >&2
    # the mutants are in the pure-Python modules: never let a compiled twin stand in for them
    if ! (cd "$work" && KRAFTWERK_PURE=1 nice -n 10 mutmut run --max-children "${JOBS:-2}" >"$work/run.log" 2>&1); then
        echo "mutation: mutmut failed for $module (the unmutated tests must pass first); see $work/run.log" >&2
        tail -5 "$work/run.log" >&2
        return 1
    fi
    (cd "$work" && mutmut results --all true) > "$work/results.txt" || true
    python - "$module" "$work/results.txt" <<'EOF'
import collections, sys
module, path = sys.argv[1], sys.argv[2]
counts = collections.Counter()
for line in open(path):
    if ":" in line:
        counts[line.rsplit(":", 1)[1].strip()] += 1
total = sum(counts.values())
killed = counts["killed"] + counts["timeout"]
score = 100.0 * killed / total if total else 0.0
detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
print(f"{module}: {total} mutants, {killed} killed ({score:.1f} %): {detail}")
EOF
}

if [ $# -eq 0 ]; then
    for module in "${CORES[@]}"; do run_one "$module"; done
else
    for module in "$@"; do run_one "$module"; done
fi
