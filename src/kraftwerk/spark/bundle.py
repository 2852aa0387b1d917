"""kraftwerk's code and compiled dependencies packed for executors that hold only pyspark and pyarrow.

Executors run the cluster's own Python. The driver hands Spark two zips, built once and cached under
a name holding the hash of their content, so a second run ships what the first one built:

* the ``kraftwerk`` package itself (pure Python) through ``SparkContext.addPyFile``, PySpark's
  documented way for pure-Python code (what ``spark.submit.pyFiles`` does): it is imported from the zip;
* the installed files of kraftwerk's runtime dependencies (``cramjam``, ``crc32c``, ``numpy``,
  ``zlib-ng``: compiled modules, which Python cannot import from a zip) through
  ``SparkContext.addArchive``: each executor unpacks it into its working directory, which goes on the
  Python workers' ``PYTHONPATH``.

The compiled modules are the driver's own files, so executors must run the same Python minor version
(which PySpark requires anyway) on the same OS and architecture. Executors that already run the
driver's own interpreter (``local[*]``) get nothing: they have it all.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import io
import logging
import os
import re
import sys
import sysconfig
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import kraftwerk
from kraftwerk.spark.errors import SparkJobError
from kraftwerk.storage.fileio import atomic_write

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: distributions every PySpark executor has: never shipped, nor what they pull in
EXECUTOR_PROVIDES = frozenset({"pyspark", "py4j", "pyarrow"})
#: kraftwerk dependencies that only the driver's command line and node processes use (terminal
#: output, the ZooKeeper client of ``migration``'s reader, a node's metrics endpoint)
DRIVER_ONLY = frozenset({"rich", "kazoo", "prometheus-client"})
#: bundles of each kind kept in the cache (the most recently used ones), and how long an older one
#: stays (Spark serves a running application's executors from the cached file itself)
KEEP = 4
KEEP_SECONDS = 24 * 3600
#: bumped when the packing rules change, so old cached bundles are not reused
_LAYOUT = "1"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True, slots=True)
class Bundle:
    code: Path
    """zip of the ``kraftwerk`` package (pure Python, imported from the zip)"""
    deps: Path
    """zip of the dependencies' installed files, unpacked on each executor as :attr:`deps_dir`"""

    @property
    def deps_dir(self) -> str:
        return self.deps.stem


def cache_dir() -> Path:
    """``$KRAFTWERK_CACHE_DIR``, else ``$XDG_CACHE_HOME/kraftwerk``, else ``~/.cache/kraftwerk``."""
    if os.environ.get("KRAFTWERK_CACHE_DIR"):
        return Path(os.environ["KRAFTWERK_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kraftwerk"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _runtime_requirements(dist: metadata.Distribution) -> list[str]:
    """Names of what ``dist`` requires outside any extra."""
    names = []
    for req in dist.requires or []:
        spec, _, marker = req.partition(";")
        match = _NAME.match(spec.strip())
        if match and "extra" not in marker:
            names.append(_canonical(match.group(0)))
    return names


def executor_distributions() -> list[metadata.Distribution]:
    """kraftwerk's runtime dependencies and theirs, minus what executors have and what only the
    driver uses; requirements not installed here (an environment marker left them out) are skipped."""
    try:
        todo = _runtime_requirements(metadata.distribution("kraftwerk"))
    except metadata.PackageNotFoundError as exc:
        raise SparkJobError("kraftwerk is not installed as a package (pip install): the list of "
                            "dependencies to ship to the executors comes from its metadata") from exc
    found: dict[str, metadata.Distribution] = {}
    while todo:
        name = todo.pop()
        if name in found or name in EXECUTOR_PROVIDES or name in DRIVER_ONLY:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found[name] = dist
        todo += _runtime_requirements(dist)
    return [found[n] for n in sorted(found)]


def _dependency_files(dist: metadata.Distribution) -> list[tuple[str, Path]]:
    """(name in the zip, file) of what ``dist`` installed into site-packages, without scripts,
    byte-code caches and test suites."""
    if dist.files is None:
        raise SparkJobError(f"cannot ship {dist.metadata['Name']} to the executors: its installed files "
                            "are not listed (no RECORD)")
    out = []
    for f in dist.files:
        parts = f.parts
        if parts[0] == ".." or "__pycache__" in parts or "tests" in parts or f.suffix == ".pyc":
            continue
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            out.append((f.as_posix(), path))
    return out


#: what the code zip leaves out: byte code, and the compiled twins with their generated C (Python
#: cannot import an extension from a zip, so executors take the pure-Python paths; see kraftwerk.native)
_NOT_SHIPPED = (".pyc", ".so", ".c")


def _code_files() -> list[tuple[str, Path]]:
    root = Path(kraftwerk.__file__).parent
    return [(f"kraftwerk/{p.relative_to(root).as_posix()}", p) for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in _NOT_SHIPPED]


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256(_LAYOUT.encode())
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:16]


def _code_digest(files: list[tuple[str, Path]]) -> str:
    return _digest(b for name, path in files for b in (name.encode(), path.read_bytes()))


def _deps_digest(dists: list[metadata.Distribution]) -> str:
    """Names, versions and RECORDs (which hold every file's hash) of the dependencies, and the
    platform their compiled modules are for."""
    parts = [sysconfig.get_platform().encode(), sys.implementation.cache_tag.encode()]
    for dist in dists:
        parts += [dist.metadata["Name"].encode(), dist.version.encode(),
                  (dist.read_text("RECORD") or "").encode()]
    return _digest(parts)


def _write_zip(path: Path, files: list[tuple[str, Path]]) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, source in files:
            zf.write(source, name)
    atomic_write(path, buffer.getbuffer(), tmp_suffix=f".{os.getpid()}.tmp")


def _cached(directory: Path, prefix: str, digest: str, files: Callable[[], list[tuple[str, Path]]]) -> Path:
    """The cached zip ``prefix-digest.zip``, built from ``files()`` when absent; zips of the same kind
    beyond the :data:`KEEP` most recently used, and unused for :data:`KEEP_SECONDS`, are removed."""
    path = directory / f"{prefix}-{digest}.zip"
    if path.exists():
        os.utime(path)  # most recently used: kept by the pruning below
        return path
    start = time.monotonic()
    directory.mkdir(parents=True, exist_ok=True)
    listed = files()
    _write_zip(path, listed)
    log.info("built %s (%d files, %d bytes) in %.1fs", path, len(listed), path.stat().st_size,
             time.monotonic() - start)
    older = sorted(directory.glob(f"{prefix}-*.zip"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in older[KEEP:]:
        if time.time() - stale.stat().st_mtime > KEEP_SECONDS:
            stale.unlink(missing_ok=True)
    return path


def build_bundle(directory: Path | None = None) -> Bundle:
    """The bundle of this installation, from the cache (``directory``, default
    ``cache_dir()/spark``) when it holds one with the same content hash."""
    directory = directory or cache_dir() / "spark"
    code_files = _code_files()
    dists = executor_distributions()
    try:
        return Bundle(_cached(directory, "kraftwerk-code", _code_digest(code_files), lambda: code_files),
                      _cached(directory, "kraftwerk-deps", _deps_digest(dists),
                              lambda: [f for d in dists for f in _dependency_files(d)]))
    except OSError as exc:
        raise SparkJobError(f"cannot write the executors' code bundle under {directory}: {exc}") from exc


def executors_run_this_interpreter(sc: SparkContext) -> bool:
    """True for a local master whose Python workers run the driver's own interpreter."""
    local = (sc.master or "").startswith("local")
    return local and os.path.abspath(sc.pythonExec) == os.path.abspath(sys.executable)


def ship(spark: SparkSession) -> Bundle | None:
    """Hand the bundle to Spark (once per application) unless the executors run this interpreter.

    Python functions and data sources capture the includes and environment when they are created, so
    this runs before any is registered. The unpacked dependencies go on ``PYTHONPATH`` twice: relative
    to the Python worker's working directory (an executor's, where Spark unpacks archives) and at the
    absolute path where the driver unpacked them (for the Python workers that plan data-source reads
    on the driver's host).
    """
    from pyspark import SparkFiles

    sc = spark.sparkContext
    if executors_run_this_interpreter(sc):
        return None
    bundle = build_bundle()
    if not any(uri.endswith(f"/{bundle.code.name}") for uri in sc.listFiles):
        sc.addPyFile(str(bundle.code))
    if not any(uri.endswith(f"/{bundle.deps.name}#{bundle.deps_dir}") for uri in sc.listArchives):
        sc.addArchive(f"{bundle.deps}#{bundle.deps_dir}")
    entries = [bundle.deps_dir, os.path.join(SparkFiles.getRootDirectory(), bundle.deps_dir)]
    current = str(sc.environment.get("PYTHONPATH", "")).split(os.pathsep)
    entries += [p for p in current if p and p not in entries]
    sc.environment["PYTHONPATH"] = os.pathsep.join(entries)
    log.info("shipping %s and %s to executors running %s", bundle.code.name, bundle.deps.name, sc.pythonExec)
    return bundle


__all__ = ["DRIVER_ONLY", "EXECUTOR_PROVIDES", "Bundle", "build_bundle", "cache_dir",
           "executor_distributions", "executors_run_this_interpreter", "ship"]
