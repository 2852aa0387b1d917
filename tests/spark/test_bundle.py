"""What the driver ships to executors: its contents, its cache, and what executor-side code imports."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kraftwerk.spark import bundle
from kraftwerk.spark.bundle import DRIVER_ONLY, EXECUTOR_PROVIDES, build_bundle, executor_distributions

#: kraftwerk.spark modules that only the driver imports (the session, the jobs' planning, shipping)
DRIVER_MODULES = {"kraftwerk.spark.bundle", "kraftwerk.spark.jobs", "kraftwerk.spark.quiet",
                  "kraftwerk.spark.session"}
#: the layers executor-side code may reach (data sources and per-partition functions are thin
#: adapters over these)
EXECUTOR_LAYERS = ("kraftwerk.protocol", "kraftwerk.versions", "kraftwerk.config", "kraftwerk.records",
                   "kraftwerk.storage", "kraftwerk.image", "kraftwerk.migration", "kraftwerk.spark",
                   # the readiness rows apply the controller's own feature checks (sans-I/O cores)
                   "kraftwerk.readiness", "kraftwerk.controller")


def _names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return zf.namelist()


def test_bundle_holds_the_package_and_its_compiled_dependencies(tmp_path: Path) -> None:
    b = build_bundle(tmp_path)
    code = _names(b.code)
    assert "kraftwerk/__init__.py" in code and "kraftwerk/spark/source.py" in code
    assert "kraftwerk/storage/scan.py" in code and "kraftwerk/py.typed" in code
    assert not [n for n in code if "__pycache__" in n or n.endswith((".pyc", ".so", ".c"))]
    # the twin's source ships; its build cannot load from a zip
    assert "kraftwerk/records/_cbatch.pyx" in code
    deps = _names(b.deps)
    tops = {n.split("/")[0] for n in deps}
    for name in ("numpy", "cramjam", "crc32c", "zlib-ng"):
        dist = metadata.distribution(name)
        # the metadata too: crc32c reads its own version through importlib.metadata
        assert f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}.dist-info/METADATA" in deps
    assert {"numpy", "cramjam", "crc32c", "zlib_ng"} <= tops
    assert any(n.startswith("numpy/_core/_multiarray_umath") and n.endswith(".so") for n in deps)
    assert not {"pyspark", "pyarrow", "py4j", "rich", "kazoo", "kraftwerk"} & tops
    assert not [n for n in deps if "/tests/" in n or "__pycache__" in n or n.startswith("..")]
    assert b.deps_dir == b.deps.stem


def test_bundle_is_built_once_and_rebuilt_when_the_code_changes(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    first = build_bundle(tmp_path)
    stamps = {p: p.stat().st_mtime_ns for p in (first.code, first.deps)}

    def no_build(path: Path, files: object) -> None:
        raise AssertionError(f"{path} rebuilt although cached")

    with monkeypatch.context() as m:
        m.setattr(bundle, "_write_zip", no_build)
        again = build_bundle(tmp_path)
    assert again == first
    assert all(p.stat().st_mtime_ns >= t for p, t in stamps.items())
    # one more file in the package: a new code zip under a new hash; the dependencies' zip stays
    extra = tmp_path / "extra.py"
    extra.write_text("X = 1\n")
    files = bundle._code_files()
    monkeypatch.setattr(bundle, "_code_files", lambda: [*files, ("kraftwerk/extra.py", extra)])
    changed = build_bundle(tmp_path)
    assert changed.code != first.code and changed.deps == first.deps
    assert "kraftwerk/extra.py" in _names(changed.code)
    assert sorted(p.name for p in tmp_path.glob("kraftwerk-*.zip")) == sorted(
        [first.code.name, changed.code.name, first.deps.name])


def test_old_bundles_beyond_the_kept_ones_are_removed_after_a_day(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import time

    files = bundle._code_files()
    built = []
    for i in range(bundle.KEEP + 3):
        extra = tmp_path / f"extra{i}.py"
        extra.write_text(f"X = {i}\n")
        monkeypatch.setattr(bundle, "_code_files", lambda e=extra: [*files, ("kraftwerk/extra.py", e)])
        built.append(build_bundle(tmp_path).code)
        # the first one was last used two days ago; the others are recent
        age = 2 * bundle.KEEP_SECONDS if i == 0 else bundle.KEEP + 3 - i
        os.utime(built[-1], (time.time() - age, time.time() - age))
    kept = sorted(tmp_path.glob("kraftwerk-code-*.zip"))
    assert built[0] not in kept and kept == sorted(built[1:])


def test_what_is_shipped_follows_kraftwerks_metadata() -> None:
    names = {d.metadata["Name"].lower() for d in executor_distributions()}
    assert names == {"cramjam", "crc32c", "immutables", "numpy", "xxhash", "zlib-ng"}
    assert not names & (EXECUTOR_PROVIDES | DRIVER_ONLY)


_PROBE = """
import importlib, json, pkgutil, sys
import pyarrow, pyspark.sql.datasource  # what every executor has
before = set(sys.modules)
import kraftwerk.spark
sources = [m.name for m in pkgutil.iter_modules(kraftwerk.spark.__path__, "kraftwerk.spark.")
           if m.name not in set(sys.argv[1].split(","))]
for name in sources + ["kraftwerk.storage.upconvert"]:  # data sources; the up-conversion's tasks
    importlib.import_module(name)
print(json.dumps({"sources": sources, "loaded": sorted(set(sys.modules) - before)}))
"""


def test_executor_side_code_imports_only_lower_layers_and_shipped_dependencies() -> None:
    pytest.importorskip("pyspark")
    # executors import kraftwerk from the code zip, where the compiled twins cannot load: pure paths
    env = {**os.environ, "KRAFTWERK_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", _PROBE, ",".join(DRIVER_MODULES)], check=True,
                         capture_output=True, text=True, env=env).stdout
    probe = json.loads(out)
    assert "kraftwerk.spark.source" in probe["sources"]
    ours = [m for m in probe["loaded"] if m.split(".")[0] == "kraftwerk"]
    leaves = ("kraftwerk", "kraftwerk.errors", "kraftwerk.native", "kraftwerk.backoff")  # pure, no imports
    assert not [m for m in ours if m not in leaves and not m.startswith(EXECUTOR_LAYERS)]
    assert not DRIVER_MODULES & set(ours)
    shipped = {d.metadata["Name"].lower() for d in executor_distributions()} | EXECUTOR_PROVIDES
    owners = metadata.packages_distributions()
    third_party = {m.split(".")[0] for m in probe["loaded"]} - set(sys.stdlib_module_names) - {"kraftwerk"}
    for top in sorted(third_party):
        dists = {d.lower() for d in owners.get(top, [])}
        assert dists & shipped, f"executors import {top} ({dists or 'no distribution'}), which is not shipped"
