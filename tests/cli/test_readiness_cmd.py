"""``kraftwerk pipeline readiness`` in one process on a generated fleet of 200 clusters: the text, the
JSON, the Parquet tables and the HTML page agree; the page renders in headless Chromium (Debian's)
with no console error and shows its overview chart and first cluster; bad input is one line; the
progress bar shows on a terminal."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.cli.main import main
from tests.readiness.generator import MetadataFleet, fleet_on_tmpfs

CHROMIUM = "/usr/bin/chromium"
KRAFTWERK = str(Path(sys.executable).with_name("kraftwerk"))


@pytest.fixture(scope="module")
def fleet() -> Iterator[MetadataFleet]:
    with fleet_on_tmpfs(200) as f:
        yield f


def _args(fleet: MetadataFleet, out: Path, *extra: str) -> list[str]:
    return ["pipeline", "readiness", "--metadata-dirs", str(fleet.root / "metadata"), "--log-dirs",
            *map(str, fleet.log_dirs), "--target", "4.3", "--out", str(out), "--no-spark", *extra]


@pytest.fixture(scope="module")
def report(fleet: MetadataFleet) -> tuple[Path, dict[str, Any], str]:
    """One run's output dir, its JSON (printed) and its text output (a second run)."""
    out = fleet.root / "report"
    code = main(_args(fleet, out, "--output", "json"))
    assert code == 0
    doc = json.loads((out / "summary.json").read_text())
    text = subprocess.run([KRAFTWERK, *_args(fleet, fleet.root / "text")], capture_output=True, text=True,
                          check=True).stdout
    return out, doc, text


def test_json_text_and_tables_agree(report: tuple[Path, dict[str, Any], str], fleet: MetadataFleet,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    out, doc, text = report
    assert doc["target"] == {"metadataVersion": "4.3-IV0", "featureLevel": 30}
    assert len(doc["clusters"]) == 200
    by_status = doc["fleet"]["byStatus"]
    assert ("Readiness for metadata.version 4.3-IV0 of 200 clusters in" in text
            and f"{by_status['blocked']} blocked, {by_status['ready']} ready" in text)
    assert f"Findings: {doc['fleet']['blockers']} blockers, {doc['fleet']['warnings']} warnings" in text
    for c in doc["clusters"]:
        assert re.search(rf"^{re.escape(c['clusterId'])}\s+{c['status']}\s", text, re.MULTILINE)
    pq = pytest.importorskip("pyarrow.parquet")
    tables = {p.stem: pq.read_table(str(p)) for p in (out / "tables").glob("*.parquet")}
    assert tables["clusters"].num_rows == 200
    assert tables["findings"].num_rows == sum(len(c["findings"]) for c in doc["clusters"])
    assert tables["history"].num_rows == sum(len(c["history"]) for c in doc["clusters"])
    assert tables["config_audit"].num_rows == sum(len(c["configAudit"]) for c in doc["clusters"])
    assert tables["losses"].num_rows == sum(len(c["downgradeLosses"]) for c in doc["clusters"])
    assert tables["copies"].num_rows == sum(len(c["copies"]) for c in doc["clusters"]) + 1
    assert tables["legacy_partitions"].num_rows == doc["fleet"]["legacyPartitions"]
    assert sorted(tables["findings"].column("kind").to_pylist()) == sorted(
        f["kind"] for c in doc["clusters"] for f in c["findings"])
    assert tables["clusters"].column("status").to_pylist() == [c["status"] for c in doc["clusters"]]


class _Page(HTMLParser):
    """The numbers of a page: ``data-count`` elements and the bars of each chart (what Vega's
    ``aria-label`` of each bar says), and every element id and in-page link."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.bars: dict[str, list[dict[str, str]]] = {}
        self.ids: set[str] = set()
        self.links: list[str] = []
        self._key: str | None = None
        self._figure: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "figure":
            self._figure = a.get("id")
        if a.get("data-count"):
            self._key = a["data-count"]
        if tag == "a" and (a.get("href") or "").startswith("#"):
            self.links.append(str(a["href"])[1:])
        label = a.get("aria-label")
        if self._figure and a.get("aria-roledescription") == "bar" and label:
            fields = dict(part.split(": ", 1) for part in label.split("; "))
            self.bars.setdefault(self._figure, []).append(fields)

    def handle_data(self, data: str) -> None:
        if self._key is not None:
            self.counts[self._key] = int(data)
            self._key = None


def test_the_pages_numbers_are_the_jsons(report: tuple[Path, dict[str, Any], str]) -> None:
    out, doc, _ = report
    page = _Page()
    page.feed((out / "report.html").read_text())
    fleet = doc["fleet"]
    expected = {"clusters": 200, "blockers": fleet["blockers"], "warnings": fleet["warnings"],
                "legacyBytes": fleet["legacyBytes"], "legacyPartitions": fleet["legacyPartitions"]}
    expected |= {f"byStatus.{s}": n for s, n in fleet["byStatus"].items()}
    for kind, k in fleet["findingsByKind"].items():
        expected |= {f"findingsByKind.{kind}.findings": k["findings"],
                     f"findingsByKind.{kind}.clusters": k["clusters"]}
    for c in doc["clusters"]:
        expected |= {f"cluster.{c['clusterId']}.blockers": c["blockers"],
                     f"cluster.{c['clusterId']}.warnings": c["warnings"]}
    assert page.counts == expected
    assert {b["readiness"]: int(b["clusters"]) for b in page.bars["chart-status"]} == fleet["byStatus"]
    assert {b["metadata.version"]: int(b["clusters"]) for b in page.bars["chart-versions"]} == \
        fleet["metadataVersions"]
    assert {b["kind"]: (int(b["findings"]), b["severity"]) for b in page.bars["chart-findings"]} == {
        kind: (k["findings"], k["severity"]) for kind, k in fleet["findingsByKind"].items()}
    legacy = sorted(((c["legacy"]["legacyBytes"], c["clusterId"]) for c in doc["clusters"]
                     if c["legacy"] and c["legacy"]["legacyBytes"]), reverse=True)
    assert [(int(b["bytes of message format v0/v1"]), b["cluster"]) for b in page.bars["chart-legacy"]] == \
        legacy[:30]
    assert {f"cluster-{c['clusterId']}" for c in doc["clusters"]} <= page.ids
    assert set(page.links) <= page.ids  # every in-page link lands
    assert "http://" not in (out / "report.html").read_text().replace("http://www.w3.org/", "")


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed "
                    "(scripts/setup.sh installs it)")
def test_the_page_in_headless_chromium(report: tuple[Path, dict[str, Any], str], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    out, doc, _ = report
    first = doc["clusters"][0]["clusterId"]
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto((out / "report.html").as_uri())
            chart = page.locator("#chart-status svg")
            assert chart.is_visible() and chart.bounding_box()["width"] > 200  # type: ignore[index]
            page.screenshot(path=str(tmp_path / "overview.png"))
            page.locator(f"#cluster-index a[href='#cluster-{first}']").click()
            table = page.locator(f"#cluster-{first} table").first
            assert table.is_visible()
            box = table.bounding_box()
            assert box is not None and 0 <= box["y"] < 1000  # the link scrolled the cluster into view
            assert doc["clusters"][0]["metadataVersion"] or "-" in table.inner_text()
            page.screenshot(path=str(tmp_path / "cluster.png"))
        finally:
            browser.close()
    assert errors == []
    assert [r for r in requests if not r.startswith("file://")] == []
    for shot in ("overview.png", "cluster.png"):
        assert (tmp_path / shot).stat().st_size > 20_000  # a rendered page, not a blank one


def test_bad_input_is_one_line(fleet: MetadataFleet, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    def run(*argv: str) -> tuple[int, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, err
        return code, err.strip()

    base = ["pipeline", "readiness", "--out", str(tmp_path / "o"), "--no-spark"]
    code, err = run(*base, "--metadata-dirs", str(fleet.root / "metadata"), "--target", "9.9")
    assert code == 1
    assert err.startswith("Unknown metadata.version '9.9'. Supported metadata.version are: 3.0-IV1,")
    code, err = run(*base, "--metadata-dirs", str(tmp_path / "gone"), "--target", "4.3")
    assert (code, err) == (1, f"none of the metadata directories exists: {tmp_path / 'gone'}")
    (tmp_path / "empty").mkdir()
    code, err = run(*base, "--metadata-dirs", str(tmp_path / "empty"), "--target", "4.3")
    assert (code, err) == (1, f"no metadata log segments or snapshots under {tmp_path / 'empty'}")
    code, err = run(*base, "--metadata-dirs", str(fleet.root / "metadata"), "--log-dirs", str(tmp_path / "x"),
                    "--target", "4.3")
    assert (code, err) == (1, f"none of the log directories exists: {tmp_path / 'x'}")
    assert not (tmp_path / "o").exists()


def test_a_missing_dir_is_skipped_and_the_exit_code_says_so(fleet: MetadataFleet, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    books = fleet.clusters[0]
    dirs = [*map(str, books.copies.values()), str(tmp_path / "gone")]
    code = main(["pipeline", "readiness", "--metadata-dirs", *dirs,
                 "--target", "4.3-IV0", "--out", str(tmp_path / "o"), "--no-spark", "--output", "json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert err == f"Directory {tmp_path / 'gone'} does not exist or is not a directory; skipped\n"
    doc = json.loads(out)
    assert doc["missingDirs"] == [str(tmp_path / "gone")] and doc["logDirs"] is None
    assert [c["clusterId"] for c in doc["clusters"]] == [books.cluster_id]
    assert doc["clusters"][0]["legacy"] is None


def test_print_spark_submit(fleet: MetadataFleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kraftwerk.cli.main import build_parser

    code = main(["pipeline", "readiness", "--metadata-dirs", str(fleet.root / "metadata"), "--target", "4.4",
                 "--out", str(tmp_path / "o"), "--master", "spark://m:7077", "--print-spark-submit"])
    out, _ = capsys.readouterr()
    argv = shlex.split(out)
    assert code == 0 and argv[:3] == ["spark-submit", "--master", "spark://m:7077"]
    job = build_parser().parse_args(argv[argv.index("pipeline"):])
    assert (job.command, job.metadata_dirs, job.target, job.out, job.log_dirs) == (
        "readiness", [str(fleet.root / "metadata")], "4.4-IV1", tmp_path / "o", None)
    assert not (tmp_path / "o").exists()


def test_progress_bar_on_a_terminal(fleet: MetadataFleet, tmp_path: Path) -> None:
    """Run under a pseudo-terminal (``script``): rich draws the bar on stderr, clusters done of all."""
    script = shutil.which("script")
    if script is None:
        pytest.skip("util-linux's script is not installed: no pseudo-terminal to run under")
    books = fleet.clusters[:3]
    dirs = " ".join(shlex.quote(str(p)) for b in books for p in b.copies.values())
    command = f"{shlex.quote(KRAFTWERK)} pipeline readiness --metadata-dirs {dirs} --target 4.3 " \
              f"--out {shlex.quote(str(tmp_path / 'o'))} --no-spark"
    run = subprocess.run([script, "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
    assert run.returncode == 0, run.stdout
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", run.stdout)
    assert "Reading metadata" in screen and "Assessing" in screen
    assert "1/3 clusters" in screen and "3/3 clusters" in screen
