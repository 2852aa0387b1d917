"""``kraftwerk pipeline scan|upconvert``: output, exit codes, problems reported without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.cli.main import main
from tests.storage.fleet import Fleet, build_fleet, read_partition_with_peer


@pytest.fixture()
def fleet(tmp_path: Path) -> Fleet:
    return build_fleet(tmp_path / "fleet", log_dirs=2, partitions_per_dir=5)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _dirs(fleet: Fleet) -> list[str]:
    return [str(d) for d in fleet.log_dirs]


def test_scan_without_spark_text_and_json(fleet: Fleet, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "pipeline", "scan", "--log-dirs", ",".join(_dirs(fleet)), "--out",
                          str(tmp_path / "out"), "--no-spark")
    assert code == 0 and err == ""
    legacy = sum(b.legacy_batches for b in fleet.partitions)
    assert f"Message format v0/v1: {sum(1 for b in fleet.partitions if b.has_legacy)} partitions, " \
           f"{legacy} batches" in out
    assert "Corrupt batches: 0" in out
    assert "Topic-partition" in out and "v0 bytes" in out
    code, out, _ = _run(capsys, "pipeline", "scan", "--log-dirs", *_dirs(fleet), "--out",
                        str(tmp_path / "out"), "--no-spark", "--output", "json")
    doc = json.loads(out)
    assert doc["totals"]["legacyBatches"] == legacy
    assert doc["totals"]["batches"] == sum(b.batches for b in fleet.partitions)
    assert len(doc["partitions"]) == len(fleet.partitions)
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["totals"] == doc["totals"]
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(str(tmp_path / "out" / "batches")).num_rows == doc["totals"]["batches"]


def test_missing_log_dirs(fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "pipeline", "scan", "--log-dirs", _dirs(fleet)[0], str(tmp_path / "gone"),
                          "--out", str(tmp_path / "out"), "--no-spark")
    assert code == 1
    assert f"Log directory {tmp_path / 'gone'} does not exist or is not a directory; skipped" in err
    assert "Scanned 1 log dirs" in out
    code, out, err = _run(capsys, "pipeline", "scan", "--log-dirs", str(tmp_path / "gone"), "--out",
                          str(tmp_path / "out"), "--no-spark")
    assert code == 1 and out == ""
    assert err.strip() == f"none of the log directories exists: {tmp_path / 'gone'}"
    code, out, err = _run(capsys, "pipeline", "upconvert", "--log-dirs", str(tmp_path / "gone"), "--in-place",
                          "--no-spark")
    assert code == 1 and "Traceback" not in err and "none of the log directories exists" in err


def test_upconvert_needs_a_destination(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "pipeline", "upconvert", "--log-dirs", *_dirs(fleet), "--no-spark")
    assert code == 1 and err.strip() == "upconvert needs --out DIR or --in-place (or --dry-run)"
    with pytest.raises(SystemExit):
        main(["pipeline", "upconvert", "--log-dirs", "x", "--out", "y", "--in-place"])


@pytest.fixture()
def broker_lock(fleet: Fleet) -> Iterator[Path]:
    """A separate process holding the first log dir's .lock the way the JVM does (POSIX lockf)."""
    locked = fleet.log_dirs[0]
    code = textwrap.dedent(f"""
        import fcntl, os, sys
        fd = os.open({str(locked / ".lock")!r}, os.O_RDWR | os.O_CREAT)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("locked", flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield locked
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)


def test_upconvert_in_place_skips_a_locked_dir_and_reports_corrupt_segments(
        fleet: Fleet, broker_lock: Path, capsys: pytest.CaptureFixture[str]) -> None:
    free = fleet.log_dirs[1]
    victim = next(b for b in fleet.partitions if b.log_dir == free and b.has_legacy)
    seg = victim.directory / f"{min(victim.segments):020d}.log"
    seg.write_bytes(seg.read_bytes()[:-3] + b"\xff\xff\xff")  # bad CRC in the last batch
    locked_before = {p: p.read_bytes() for p in broker_lock.rglob("*.log")}
    code, out, err = _run(capsys, "pipeline", "upconvert", "--log-dirs", *_dirs(fleet), "--in-place",
                          "--no-spark")
    assert code == 1
    assert f"LOCKED: {broker_lock}: Failed to acquire lock on file .lock in {broker_lock}" in err
    assert f"CORRUPT: {free}/{victim.topic}-{victim.partition} segment {min(victim.segments)}" in err
    assert "Traceback" not in err
    assert "1 log dirs locked" in out and "1 corrupt" in out
    assert {p: p.read_bytes() for p in broker_lock.rglob("*.log")} == locked_before
    for books in fleet.partitions:
        if books.log_dir == free and books is not victim:
            records, magics = read_partition_with_peer("kafka.record", books.directory)
            assert magics == {2} and records == books.records


def test_upconvert_dry_run_json_and_out_dir(fleet: Fleet, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "pipeline", "upconvert", "--log-dirs", *_dirs(fleet), "--dry-run",
                        "--no-spark", "--output", "json")
    doc = json.loads(out)
    assert code == 0 and doc["dryRun"] is True
    legacy_segments = sum(1 for b in fleet.partitions for d in b.segments.values() if _has_legacy(d))
    assert doc["counts"]["would-convert"] == legacy_segments
    code, out, _ = _run(capsys, "pipeline", "upconvert", "--log-dirs", *_dirs(fleet), "--out",
                        str(tmp_path / "conv"), "--no-spark")
    assert code == 0 and f"Converted {legacy_segments} segments" in out
    assert len(list((tmp_path / "conv").rglob("*.log"))) == legacy_segments


def _has_legacy(data: bytes) -> bool:
    from tests.records.helpers import split_batches

    return any(c[16] < 2 for c in split_batches(data))


@pytest.mark.spark
def test_scan_and_upconvert_on_spark(fleet: Fleet, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from tests.spark.session import shared_spark

    shared_spark()  # the commands reuse the active session and leave it running
    code, out, err = _run(capsys, "pipeline", "scan", "--log-dirs", *_dirs(fleet), "--out",
                          str(tmp_path / "out"), "--master", "local[2]", "--output", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["totals"]["legacyBatches"] == sum(b.legacy_batches for b in fleet.partitions)
    assert doc["totals"]["records"] == sum(len(b.records) for b in fleet.partitions)
    legacy_segments = sum(1 for b in fleet.partitions for d in b.segments.values() if _has_legacy(d))
    code, out, err = _run(capsys, "pipeline", "upconvert", "--log-dirs", *_dirs(fleet), "--in-place",
                          "--master", "local[2]")
    assert code == 0, err
    assert f"Converted {legacy_segments} segments" in out
    code, out, err = _run(capsys, "pipeline", "upconvert", "--log-dirs", *_dirs(fleet), "--in-place",
                          "--master", "local[2]")
    assert code == 0 and "Converted 0 segments" in out
    for books in fleet.partitions:
        records, magics = read_partition_with_peer("aiokafka.record.memory_records", books.directory)
        assert magics == {2} and records == books.records


def test_log_dirs_and_out_as_file_urls(fleet: Fleet, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    urls = [f"file://{d}" for d in _dirs(fleet)]
    code, out, err = _run(capsys, "pipeline", "scan", "--log-dirs", *urls, "--out", f"file://{tmp_path}/o",
                          "--no-spark", "--output", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["logDirs"] == _dirs(fleet) and doc["out"] == f"{tmp_path}/o"
    assert doc["totals"]["batches"] == sum(b.batches for b in fleet.partitions)
    with pytest.raises(SystemExit) as refused:
        main(["pipeline", "scan", "--log-dirs", "s3://b/data", "--out", str(tmp_path / "o"), "--no-spark"])
    assert refused.value.code == 2
    assert err_line(capsys) == ("kraftwerk pipeline scan: error: argument --log-dirs: s3://b/data: only "
                                "local paths and file:// URLs can be read (scheme 's3'); every executor must "
                                "see them at the same path (see --help)")


def test_print_spark_submit(fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    import kraftwerk.cli.spark_submit as entry
    from kraftwerk.cli.main import build_parser

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    code, out, err = _run(capsys, "pipeline", "upconvert", "--log-dirs", ",".join(_dirs(fleet)),
                          "--out", "conv", "--master", "spark://m:7077", "--conf", "spark.executor.memory=2g",
                          "--print-spark-submit")
    assert code == 0 and err == ""
    argv = shlex.split(out)
    assert argv[:3] == ["spark-submit", "--master", "spark://m:7077"]
    # the executors' Python is the cluster's (python3 unless named), the driver's is this one
    assert argv[3:9] == ["--conf", "spark.pyspark.python=python3",
                         "--conf", f"spark.pyspark.driver.python={sys.executable}",
                         "--conf", "spark.executor.memory=2g"]
    assert Path(argv[9]) == Path(entry.__file__).resolve()
    job = build_parser().parse_args(argv[10:])  # what the submitted driver runs
    assert (job.command, job.log_dirs, job.out, job.master, job.conf) == (
        "upconvert", _dirs(fleet), Path("conv").absolute(), None, [])
    assert not (job.in_place or job.dry_run or job.no_spark or job.print_spark_submit)
    assert not Path("conv").exists()  # nothing ran
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python3")
    code, out, _ = _run(capsys, "pipeline", "scan", "--log-dirs", *_dirs(fleet), "--out", str(tmp_path / "s"),
                        "--print-spark-submit", "--output", "json")
    argv = json.loads(out)["argv"]
    assert code == 0 and "--master" not in argv and "spark.pyspark.python=/opt/py/bin/python3" in argv
    assert argv[-2:] == ["--output", "json"] and not (tmp_path / "s").exists()
    code, _, err = _run(capsys, "pipeline", "scan", "--log-dirs", *_dirs(fleet), "--out", str(tmp_path / "s"),
                        "--no-spark", "--print-spark-submit")
    assert code == 1 and err.strip() == "--print-spark-submit runs the job on Spark: drop --no-spark"


def err_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line argparse printed on stderr."""
    [line] = capsys.readouterr().err.strip().splitlines()
    return line
