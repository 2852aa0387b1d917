"""``kraftwerk dump-log`` against Kafka's own kafka-dump-log.sh transcripts and broken files."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from kraftwerk.cli.main import main
from kraftwerk.records.batch import iter_batches
from tests.conftest import golden_path


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["dump-log", *args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def _kafka_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()[1:]  # line 1 names the dumped path


def test_metadata_segment_matches_kafka_line_for_line(capsys: pytest.CaptureFixture[str]) -> None:
    segment = golden_path("kafka-4.3-standalone", "00000000000000000000.log")
    expected = _kafka_lines(golden_path("kafka-4.3-standalone", "kafka-dump-log.txt"))
    # Kafka's transcript was taken when the segment ended at byte 10478; the broker kept appending.
    code, lines, _ = _dump(capsys, "--cluster-metadata-decoder", "--deep-iteration", "--max-bytes", "10478",
                           "--files", str(segment))
    assert code == 0
    assert lines[1:] == expected
    code, full, _ = _dump(capsys, "--cluster-metadata-decoder", "--files", str(segment))
    assert full[1:len(expected) + 1] == expected
    assert len(full) > len(lines)


def test_mixed_format_segment_matches_kafka_line_for_line(capsys: pytest.CaptureFixture[str]) -> None:
    segment = golden_path("mixed-formats", "00000000000000000000.log")
    expected = _kafka_lines(golden_path("mixed-formats", "kafka-dump-log.txt"))
    code, lines, _ = _dump(capsys, "--deep-iteration", "--print-data-log", "--files", str(segment))
    assert code == 0
    assert lines[1:] == expected


def test_shallow_dump_prints_only_batches(capsys: pytest.CaptureFixture[str]) -> None:
    segment = golden_path("mixed-formats", "00000000000000000000.log")
    expected = [line for line in _kafka_lines(golden_path("mixed-formats", "kafka-dump-log.txt"))
                if not line.startswith("|")]
    _, lines, _ = _dump(capsys, "--files", str(segment))
    assert lines[1:] == expected


def test_skip_record_metadata_prints_payloads_only(capsys: pytest.CaptureFixture[str]) -> None:
    segment = golden_path("mixed-formats", "00000000000000000000.log")
    _, lines, _ = _dump(capsys, "--print-data-log", "--skip-record-metadata", "--files", str(segment))
    records = [line for line in lines if line.startswith("|")]
    assert records and all(line.startswith(("| key: ", "| payload: ")) for line in records)


def test_snapshot_and_bootstrap_files(capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = golden_path("kafka-4.3-standalone", "00000000000000000000-0000000000.checkpoint")
    bootstrap = golden_path("kafka-4.3-standalone", "bootstrap.checkpoint")
    code, lines, _ = _dump(capsys, "--cluster-metadata-decoder", "--files", f"{snapshot},{bootstrap}")
    assert code == 0
    assert "Snapshot end offset: 0, epoch: 0" in lines
    assert "KRaft bootstrap snapshot" in lines
    text = "\n".join(lines)
    assert "SnapshotHeader {" in text and "SnapshotFooter {" in text
    assert '"type":"FEATURE_LEVEL_RECORD"' in text


@pytest.mark.parametrize("parts", [
    ("kafka-4.3-standalone", "00000000000000000000.log"),
    ("legacy", "v1-gzip", "00000000000000000000.log"),
    ("mixed-formats", "00000000000000000000.log"),
])
def test_json_output_is_one_object_per_batch(capsys: pytest.CaptureFixture[str],
                                            parts: tuple[str, ...]) -> None:
    check_json_is_one_object_per_batch(capsys, golden_path(*parts))


def check_json_is_one_object_per_batch(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    """``dump-log --output json`` prints one object per batch of a real segment, every record in it."""
    code, lines, _ = _dump(capsys, "--deep-iteration", "--output", "json", "--files", str(path))
    assert code == 0
    batches = [json.loads(line) for line in lines]
    expected = list(iter_batches(path.read_bytes()))
    assert [b["lastOffset"] for b in batches] == [b.last_offset for b in expected]
    assert sum(len(b["records"]) for b in batches) == sum(b.record_count for b in expected)


def test_metadata_json_nests_decoded_records(capsys: pytest.CaptureFixture[str]) -> None:
    path = golden_path("kafka-4.3-standalone", "00000000000000000000.log")
    _, lines, _ = _dump(capsys, "--cluster-metadata-decoder", "--output", "json", "--files", str(path))
    types = {r["payload"]["type"] for line in lines for r in json.loads(line)["records"] if "payload" in r}
    assert {"FEATURE_LEVEL_RECORD", "REGISTER_CONTROLLER_RECORD", "REGISTER_BROKER_RECORD"} <= types


def test_truncated_tail_is_reported_like_kafka(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = golden_path("mixed-formats", "00000000000000000000.log").read_bytes()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data[:-10])
    code, lines, _ = _dump(capsys, "--files", str(path))
    assert code == 0
    last_batch = list(iter_batches(data))[-1]
    assert lines[-1] == f"Found {last_batch.size - 10} invalid bytes at the end of {path.name}"


def test_corrupt_framing_is_one_line_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = bytearray(golden_path("legacy", "v1-none", "00000000000000000000.log").read_bytes())
    struct.pack_into(">i", data, 8, 3)  # a size below the minimum record overhead
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    code, _, err = _dump(capsys, "--files", str(path))
    assert code == 1
    assert "minimum record overhead" in err and "Traceback" not in err


def test_missing_file_and_unknown_suffix(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "00000000000000000000.log"
    with pytest.raises(SystemExit) as usage:
        _dump(capsys, "--files", str(missing))
    assert usage.value.code == 2
    assert f"argument --files: {missing}: No such file or directory" in capsys.readouterr().err
    (tmp_path / "x.txt").write_text("hi")
    code, _, err = _dump(capsys, "--files", str(tmp_path / "x.txt"))
    assert code == 0 and "Ignoring unknown file" in err


def _indexed_segment(tmp_path: Path) -> tuple[Path, list[tuple[int, int]]]:
    source = golden_path("mixed-formats", "00000000000000000000.log")
    log = tmp_path / "00000000000000000000.log"
    shutil.copy(source, log)
    entries = [(b.last_offset, b.position) for b in iter_batches(log.read_bytes())][::10]
    return log, entries


def test_offset_index_dump_and_verify(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log, entries = _indexed_segment(tmp_path)
    index = log.with_suffix(".index")
    index.write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
    code, lines, err = _dump(capsys, "--files", str(index))
    assert code == 0 and err == ""
    assert lines[1:] == [f"offset: {o} position: {p}" for o, p in entries]
    bad = [(entries[1][0] + 1, entries[1][1]), *entries[2:]]
    index.write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in bad))
    code, lines, err = _dump(capsys, "--verify-index-only", "--files", str(index))
    assert code == 0 and lines == [f"Dumping {index}"]
    assert f"  Index offset: {bad[0][0]}, log offset: {entries[1][0]}" in err.splitlines()


def test_time_index_dump(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log, entries = _indexed_segment(tmp_path)
    log.with_suffix(".index").write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
    batches = {b.last_offset: b for b in iter_batches(log.read_bytes())}
    v2 = [(o, p) for o, p in entries if batches[o].magic == 2]
    stamps = [(max(r.timestamp for r in batches[o].records()), o) for o, _ in v2]
    log.with_suffix(".timeindex").write_bytes(b"".join(struct.pack(">qi", t, o) for t, o in stamps))
    code, lines, err = _dump(capsys, "--files", str(log.with_suffix(".timeindex")))
    assert code == 0 and err == ""
    assert lines[1:] == [f"timestamp: {t} offset: {o}" for t, o in stamps]


# ---------------------------------------------------------------- progress bar and memory

def _synthetic(tmp_path: Path, size: int, name: str = "00000000000000000000.log") -> Path:
    from bench.bench_memory import write_synthetic_segment

    path = tmp_path / name
    write_synthetic_segment(path, size, value_size=512, per_batch=50)
    return path


@pytest.mark.parametrize(("stderr_tty", "stdout_tty", "shown"), [
    (True, False, True), (False, False, False), (True, True, False), (False, True, False)])
def test_progress_bar_only_when_stderr_is_a_terminal_and_stdout_is_not(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        stderr_tty: bool, stdout_tty: bool, shown: bool) -> None:
    import sys

    from kraftwerk.cli import dump_log_cmd

    path = _synthetic(tmp_path, 256 * 1024)
    _, plain, err = _dump(capsys, "--deep-iteration", "--files", str(path))
    assert err == ""
    monkeypatch.setattr(dump_log_cmd, "PROGRESS_MIN_BYTES", 1024)
    monkeypatch.setattr(dump_log_cmd, "_is_terminal",
                        lambda s: (stderr_tty and s is sys.stderr) or (stdout_tty and s is sys.stdout))
    code, lines, err = _dump(capsys, "--deep-iteration", "--files", str(path))
    assert code == 0
    assert lines == plain  # the bar never touches the text Kafka's tool would print
    assert (path.name in err) is shown
    assert ("\x1b[" in err) is shown  # drawn with terminal control sequences, on stderr only


def test_small_files_get_no_progress_bar(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    import sys

    from kraftwerk.cli import dump_log_cmd

    monkeypatch.setattr(dump_log_cmd, "_is_terminal", lambda s: s is sys.stderr)
    path = _synthetic(tmp_path, 64 * 1024)
    code, _, err = _dump(capsys, "--files", str(path))
    assert code == 0 and err == ""  # far below PROGRESS_MIN_BYTES


def _traced_peak(run: object) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        run()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_dump_log_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    from kraftwerk.cli.dump_log_cmd import Options, dump_log

    small = _synthetic(tmp_path, 256 * 1024, "00000000000000000000.log")
    large = _synthetic(tmp_path, 4 * 1024 * 1024, "00000000000000100000.log")
    written = [0]

    def sink(text: str) -> None:
        written[0] += len(text)

    def dump(path: Path) -> None:
        problems: list[str] = []
        opts = Options(print_contents=True, deep=True, metadata=False, skip_record_metadata=False,
                       max_bytes=2**31 - 1, verify_only=False, sanity_only=False, json=False, out=sink)
        dump_log(path, opts, problems)
        assert problems == []

    dump(small)  # warm-up: lazily built tables and caches are not part of the measurement
    small_peak = _traced_peak(lambda: dump(small))
    before = written[0]
    large_peak = _traced_peak(lambda: dump(large))
    assert written[0] - before > 4 * 1024 * 1024  # every record's payload went through
    # a batch of 50 x 512 B records and its lines (about 40 KiB), not the 4 MiB file
    assert large_peak < 512 * 1024
    assert large_peak < small_peak * 1.5 + 128 * 1024


def test_index_sanity_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log, entries = _indexed_segment(tmp_path)
    index, tindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    index.write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
    tindex.write_bytes(struct.pack(">qi", 5, entries[0][0]))
    code, lines, _ = _dump(capsys, "--index-sanity-check", "--files", f"{index},{tindex}")
    assert code == 0
    assert lines == [f"Dumping {index}", f"{index} passed sanity check.",
                     f"Dumping {tindex}", f"{tindex} passed sanity check."]
    index.write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in reversed(entries)))
    code, _, err = _dump(capsys, "--index-sanity-check", "--files", str(index))
    assert code == 1 and "offsets must increase" in err and "Traceback" not in err
    tindex.write_bytes(b"\x00" * 13)
    code, _, err = _dump(capsys, "--index-sanity-check", "--files", str(tindex))
    assert code == 1 and "multiple of 12" in err


def test_offsets_are_checked_from_the_first_record_whatever_the_base(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.storage.helpers import make_batches, write_segment

    segment = write_segment(tmp_path, 12, make_batches(3, base_offset=12))
    code, _, err = _dump(capsys, "--deep-iteration", "--files", str(segment))
    assert code == 0
    assert "Non-consecutive" not in err


def test_non_consecutive_offsets_are_listed_latest_first_as_kafka_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.storage.helpers import make_batches, write_segment

    batches = [b for base in (0, 10, 20) for b in make_batches(1, base_offset=base)]
    segment = write_segment(tmp_path, 0, batches)
    _, _, err = _dump(capsys, "--deep-iteration", "--files", str(segment))
    lines = err.splitlines()
    start = lines.index(f"Non-consecutive offsets in {segment.resolve()}")
    assert lines[start + 1:start + 3] == ["  12 is followed by 20", "  2 is followed by 10"]
