"""Side by side: one benchmark command run against a git revision and against this working tree.

    python -m bench.bench_against --base main --rounds 3 -- -m kraftwerk.cli.main sim lifecycle --seeds 40

The base revision is checked out into a temporary worktree; the two trees take turns every round
(so load from other processes on a shared machine hits both alike), each run is
``python <args...>`` with that tree's ``src`` first on the path. Reported per tree: the best wall
time, the best CPU time of the run's own processes (what a loaded machine disturbs least; node
processes a command detaches are not counted) and the last lines the best run printed.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(slots=True)
class Tree:
    name: str
    path: Path
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def run_once(tree: Tree, args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": f"{tree.path / 'src'}{os.pathsep}{tree.path}"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=tree.path, env=env, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{tree.name}: exit {done.returncode}\n{done.stderr[-2000:]}")
    tree.walls.append(wall)
    tree.cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    tree.outputs.append(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git revision to compare with (default main)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lines", type=int, default=8, help="output lines shown per tree")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then the python arguments of the run")
    ns = parser.parse_args()
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    if not args:
        parser.error("give the command after --")
    with tempfile.TemporaryDirectory(prefix="kraftwerk-base-") as tmp:
        base_path = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(base_path), ns.base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            trees = [Tree(ns.base, base_path), Tree("this tree", ROOT)]
            for _ in range(ns.rounds):
                for tree in trees:
                    run_once(tree, args)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_path)], cwd=ROOT, check=False,
                           capture_output=True)
    base, this = trees
    print(f"python {' '.join(args)}  ({ns.rounds} rounds, interleaved)")
    for tree in trees:
        best = tree.cpus.index(min(tree.cpus))
        print(f"{tree.name}: best wall {min(tree.walls):.2f} s, best CPU {min(tree.cpus):.2f} s")
        for line in tree.outputs[best].strip().splitlines()[-ns.lines:]:
            print(f"    {line}")
    print(f"this tree / {ns.base}: wall {min(this.walls) / min(base.walls):.3f}x, "
          f"CPU {min(this.cpus) / min(base.cpus):.3f}x (below 1: faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
