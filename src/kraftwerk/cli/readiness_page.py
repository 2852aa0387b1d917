"""The readiness report as one self-contained HTML page: inline CSS, charts as inline SVG, no script,
nothing fetched from the network.

The page is drawn from the summary document alone. The overview holds the fleet's counts, four charts
(clusters by readiness, findings by kind, old-format bytes by cluster, metadata.version
distribution; Vega-Lite specs built with Altair and rendered to SVG by vl-convert), the findings by
kind with links to the clusters that have them, and an index of the clusters; then one section per
cluster (its findings, nodes, config audit, downgrade losses, feature-level history, old-format
partitions, metadata copies) linking back. Every count is also an element with a ``data-count``
attribute, so a test can read the page's numbers.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kraftwerk.readiness.assess import KRAFT_SOURCE, Status

Document = Mapping[str, Any]
#: clusters shown in the old-format bytes chart (the largest)
LEGACY_CHART_CLUSTERS = 30
STATUS_COLORS = {Status.UNREADABLE.value: "#7f7f7f", Status.BLOCKED.value: "#d62728",
                 Status.READY.value: "#2ca02c", Status.AT_TARGET.value: "#1f77b4"}
SEVERITY_COLORS = {"blocker": "#d62728", "warning": "#ff7f0e"}

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 2rem 3rem; color: #1d1d1f; }
h1 { margin: 1.2rem 0 .2rem; font-size: 1.6rem; } h2 { margin-top: 2rem; border-bottom: 1px solid #ddd; }
h3 { margin: 1.2rem 0 .4rem; font-size: 1.05rem; }
nav a, .back { margin-right: 1rem; }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f6; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 1rem; }
figure { margin: 0; padding: .5rem; border: 1px solid #eee; border-radius: 6px; overflow-x: auto; }
figcaption { font-weight: 600; margin-bottom: .3rem; } figure svg { max-width: 100%; height: auto; }
.status { padding: .05rem .4rem; border-radius: 4px; color: #fff; font-size: .85rem; white-space: nowrap; }
.cards { display: flex; flex-wrap: wrap; gap: .8rem; margin: 1rem 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: .5rem .9rem; min-width: 7rem; }
.card .n { font-size: 1.5rem; font-weight: 600; display: block; }
.cluster { border-top: 2px solid #eee; margin-top: 2rem; }
.note { color: #555; font-size: .9rem; } .mono { font-family: ui-monospace, monospace; font-size: .85rem; }
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _anchor(cluster_id: str) -> str:
    return f"cluster-{cluster_id}"


def _status(status: str | None) -> str:
    color = STATUS_COLORS.get(status or "", "#7f7f7f")
    return f'<span class="status" style="background:{color}">{_e((status or "-").replace("_", " "))}</span>'


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], *, numeric: Sequence[int] = (),
           table_id: str | None = None) -> str:
    """A table whose cells are already HTML; columns in ``numeric`` are right-aligned."""
    ident = f' id="{_e(table_id)}"' if table_id else ""
    head = "".join(f'<th{" class=num" if i in numeric else ""}>{_e(h)}</th>' for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f'<td{" class=num" if i in numeric else ""}>{c}</td>'
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _count(key: str, value: int) -> str:
    return f'<span data-count="{_e(key)}">{value}</span>'


# ---------------------------------------------------------------------- charts

def _svg(chart: Any) -> str:
    import vl_convert

    svg: str = vl_convert.vegalite_to_svg(chart.to_dict())
    return svg


def _bar(values: list[dict[str, Any]], x: str, y: str, *, y_order: Sequence[str], color: str,
         colors: Mapping[str, str], x_title: str, y_title: str) -> str:
    import altair as alt

    domain = list(colors)
    encoding: dict[str, Any] = {
        "x": alt.X(f"{x}:Q", title=x_title, axis=alt.Axis(tickMinStep=1)),
        "y": alt.Y(f"{y}:N", title=y_title, sort=list(y_order)),
        "color": alt.Color(f"{color}:N", scale=alt.Scale(domain=domain, range=[colors[d] for d in domain]),
                           legend=None if color == y else alt.Legend(title=color)),
    }
    chart = alt.Chart(alt.Data(values=values)).mark_bar().encode(**encoding)  # type: ignore[no-untyped-call]
    return _svg(chart.properties(width=320, height=max(60, 22 * len(y_order))))


def _charts(doc: Document) -> str:
    fleet = doc["fleet"]
    statuses = [s.value for s in Status]
    status_chart = _bar([{"status": s, "clusters": fleet["byStatus"][s]} for s in statuses], "clusters",
                        "status", y_order=statuses, color="status", colors=STATUS_COLORS, x_title="clusters",
                        y_title="readiness")
    kinds = fleet["findingsByKind"]
    kind_values = [{"kind": k, "findings": v["findings"], "severity": v["severity"]}
                   for k, v in kinds.items()]
    kind_chart = _bar(kind_values, "findings", "kind", y_order=list(kinds), color="severity",
                      colors=SEVERITY_COLORS, x_title="findings", y_title="kind")
    versions = fleet["metadataVersions"]
    mv_chart = _bar([{"version": v, "clusters": n} for v, n in versions.items()], "clusters", "version",
                    y_order=list(versions), color="version", colors={v: "#1f77b4" for v in versions},
                    x_title="clusters", y_title="metadata.version")
    figures = [("chart-status", "Clusters by readiness", status_chart),
               ("chart-findings", "Findings by kind", kind_chart)]
    legacy = sorted(((c["legacy"]["legacyBytes"], c["clusterId"]) for c in doc["clusters"]
                     if c["legacy"] and c["legacy"]["legacyBytes"]), reverse=True)
    if doc["logDirs"] is None:
        legacy_html = '<p class="note">No log dirs were scanned (--log-dirs).</p>'
    elif not legacy:
        legacy_html = '<p class="note">No partition holds message format v0/v1.</p>'
    else:
        shown = legacy[:LEGACY_CHART_CLUSTERS]
        legacy_html = _bar([{"cluster": cid, "bytes": n, "data": "v0/v1"} for n, cid in shown], "bytes",
                           "cluster", y_order=[cid for _, cid in shown], color="data",
                           colors={"v0/v1": "#ff7f0e"}, x_title="bytes of message format v0/v1",
                           y_title="cluster")
        if len(legacy) > len(shown):
            legacy_html += f'<p class="note">The {len(shown)} largest of {len(legacy)} clusters.</p>'
    figures.append(("chart-legacy", "Old-format bytes by cluster", legacy_html))
    figures.append(("chart-versions", "metadata.version distribution", mv_chart))
    return "".join(f'<figure id="{i}"><figcaption>{_e(t)}</figcaption>{svg}</figure>'
                   for i, t, svg in figures)


# ---------------------------------------------------------------------- overview

def _cards(doc: Document) -> str:
    fleet = doc["fleet"]
    cards = [("clusters", "clusters", fleet["clusters"])]
    cards += [(f"byStatus.{s}", s.replace("_", " "), n) for s, n in fleet["byStatus"].items()]
    cards += [("blockers", "blockers", fleet["blockers"]), ("warnings", "warnings", fleet["warnings"])]
    if doc["logDirs"] is not None:
        cards += [("legacyPartitions", "v0/v1 partitions", fleet["legacyPartitions"]),
                  ("legacyBytes", "v0/v1 bytes", fleet["legacyBytes"])]
    items = "".join(f'<div class="card"><span class="n">{_count(k, n)}</span>{_e(label)}</div>'
                    for k, label, n in cards)
    return f'<div class="cards">{items}</div>'


def _kinds(doc: Document) -> str:
    clusters_of: dict[str, list[str]] = {}
    for c in doc["clusters"]:
        for kind in dict.fromkeys(f["kind"] for f in c["findings"]):
            clusters_of.setdefault(kind, []).append(c["clusterId"])
    rows = []
    for kind, k in doc["fleet"]["findingsByKind"].items():
        links = ", ".join(f'<a href="#{_e(_anchor(cid))}">{_e(cid)}</a>' for cid in clusters_of.get(kind, []))
        rows.append((f"<code>{_e(kind)}</code>", _e(k["title"]), _e(k["severity"]),
                     _count(f"findingsByKind.{kind}.findings", k["findings"]),
                     _count(f"findingsByKind.{kind}.clusters", k["clusters"]), links or "-"))
    return _table(("kind", "what", "severity", "findings", "clusters", "which clusters"), rows,
                  numeric=(3, 4))


def _index(doc: Document) -> str:
    rows = []
    for c in doc["clusters"]:
        legacy = "-" if c["legacy"] is None else str(c["legacy"]["legacyBytes"])
        first = next((f["message"] for f in c["findings"] if f["severity"] == "blocker"), "")
        link = f'<a href="#{_e(_anchor(c["clusterId"]))}">{_e(c["clusterId"])}</a>'
        rows.append((link, _status(c["status"]), _e(c["metadataVersion"] or "-"), _e(c["direction"] or "-"),
                     _count(f'cluster.{c["clusterId"]}.blockers', c["blockers"]),
                     _count(f'cluster.{c["clusterId"]}.warnings', c["warnings"]), _e(legacy), _e(first)))
    return _table(("cluster", "readiness", "metadata.version", "move", "blockers", "warnings", "v0/v1 bytes",
                   "first blocker"), rows, numeric=(4, 5, 6), table_id="cluster-index")


# ---------------------------------------------------------------------- one cluster

def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _section(title: str, body: str, empty: str = "none") -> str:
    return f"<h3>{_e(title)}</h3>" + (body or f'<p class="note">{_e(empty)}</p>')


def _nodes(c: Mapping[str, Any]) -> str:
    rows = []
    for role in ("brokers", "controllers"):
        for n in c[role]:
            rng = n["metadataVersionRange"]
            state = ("-" if role == "controllers" else "fenced" if n.get("fenced")
                     else "in controlled shutdown" if n.get("inControlledShutdown") else "unfenced")
            rows.append((_e(role[:-1]), _e(n["id"]), _e(f'{rng["minVersion"]} to {rng["maxVersion"]}'),
                         _e("yes" if n["supportsTarget"] else "no"), _e(state),
                         _e(n.get("staticConfigs", "-"))))
    return _table(("role", "id", "metadata.version range", "supports target", "state", "static configs"),
                  rows) if rows else ""


def _cluster(c: Mapping[str, Any], target: str) -> str:
    cid = c["clusterId"]
    parts = [f'<section class="cluster" id="{_e(_anchor(cid))}">',
             f'<h2>Cluster {_e(cid)} {_status(c["status"])}</h2>',
             '<p><a class="back" href="#overview">&uarr; overview</a><a class="back" href="#cluster-index">'
             'cluster index</a></p>']
    facts = [("source", c["source"] if c["source"] != KRAFT_SOURCE else "KRaft metadata log"),
             ("metadata.version", c["metadataVersion"] or "-"), ("target", target),
             ("move", c["direction"] or "-"), ("read from node", c["sourceNode"]),
             ("last offset", c["lastOffset"]), ("last append", _time(c["lastLogTimeMs"]))]
    if c["image"]:
        facts += [(k, v) for k, v in c["image"].items() if k != "metadataVersion"]
    parts.append(_table(("fact", "value"), ((_e(k), _e(v)) for k, v in facts)))
    if c["error"]:
        parts.append(f'<p class="note">Cannot assess: {_e(c["error"])}</p>')
    parts.append(_section("Findings", _table(
        ("kind", "severity", "subject", "what"),
        ((f'<code>{_e(f["kind"])}</code>', _e(f["severity"]), _e(f["subject"]), _e(f["message"]))
         for f in c["findings"])) if c["findings"] else "", "Nothing blocks the target."))
    parts.append(_section("Brokers and controllers", _nodes(c), "No registered nodes."))
    parts.append(_section("Config audit (KIP-1294)", _table(
        ("resource", "config", "value", "source", "rule", "since"),
        ((_e(f'{a["resourceType"].lower()} {a["resourceName"] or "(cluster default)"}'), _e(a["config"]),
          _e(a["value"]), _e(a["source"] or "-"), _e(a["rule"]), _e(a["sinceMetadataVersion"] or "base"))
         for a in c["configAudit"])) if c["configAudit"] else "",
        "Every effective config is valid at the target."))
    if c["direction"] == "downgrade":
        parts.append(_section("What a downgrade to the target loses", "".join(
            f"<li>{_e(loss)}</li>" for loss in c["downgradeLosses"]).join(("<ul>", "</ul>"))
            if c["downgradeLosses"] else "", "Nothing."))
    parts.append(_section("Feature-level history", _table(
        ("offset", "appended", "feature", "from", "to"),
        ((_e(h["offset"]), _e(_time(h["appendTimeMs"])), _e(h["feature"]),
          _e("-" if h["fromLevel"] is None else h["fromLevel"]), _e(h["toLevel"])) for h in c["history"]),
        numeric=(0, 3, 4)) if c["history"] else "", "The log records no feature-level change."))
    legacy = c["legacy"]
    if legacy is not None:
        parts.append(_section(f'Message format v0/v1 ({legacy["legacyBytes"]} bytes in '
                              f'{legacy["legacyPartitions"]} of {legacy["partitions"]} partitions)', _table(
            ("partition", "log dir", "v0 bytes", "v1 bytes", "batches", "offsets"),
            ((_e(f'{p["topic"]}-{p["partition"]}'), f'<span class="mono">{_e(p["logDir"])}</span>',
              _e(p["v0Bytes"]), _e(p["v1Bytes"]), _e(p["legacyBatches"]),
              _e(f'{p["legacyFirstOffset"]}..{p["legacyLastOffset"]}')) for p in legacy["legacyByPartition"]),
            numeric=(2, 3, 4)) if legacy["legacyByPartition"] else "", "None."))
    parts.append(_section("Metadata copies read", _table(
        ("node", "files", "records", "unreadable", "log start", "last offset", "snapshot end"),
        ((_e(f'{k["nodeId"]}{" (read)" if k["nodeId"] == c["sourceNode"] else ""}'), _e(k["files"]),
          _e(k["records"]), _e(k["errors"]), _e(k["logStartOffset"]), _e(k["lastOffset"]),
          _e(k["snapshotEndOffset"])) for k in c["copies"]), numeric=(1, 2, 3, 4, 5, 6))))
    if c["notes"]:
        items = "".join(f'<li class="note">{_e(n)}</li>' for n in c["notes"])
        parts.append(f"<h3>Notes</h3><ul>{items}</ul>")
    parts.append("</section>")
    return "".join(parts)


def render_page(doc: Document) -> str:
    """The whole page of a readiness summary document."""
    target = doc["target"]["metadataVersion"]
    fleet = doc["fleet"]
    title = f"Fleet readiness for metadata.version {target}"
    inputs = f'{len(doc["metadataDirs"])} metadata dir(s)' + (
        "" if doc["logDirs"] is None else f', {len(doc["logDirs"])} log dir(s)')
    extra = []
    if fleet["unattributedMetadataCopies"]:
        extra.append(f'{len(fleet["unattributedMetadataCopies"])} metadata copies without a meta.properties '
                     "(no cluster id) were not assessed")
    if fleet["logDirsOfNoCluster"]:
        orphan = fleet["logDirsOfNoCluster"]
        extra.append(f'{len(orphan["logDirs"])} log dir(s) of no assessed cluster hold '
                     f'{orphan["legacyBytes"]} bytes of message format v0/v1')
    if doc["missingDirs"]:
        extra.append("missing: " + ", ".join(doc["missingDirs"]))
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in extra)
    return "".join((
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f'<header id="overview"><h1>{_e(title)}</h1><p class="note">{_e(inputs)}; '
        f"kraftwerk pipeline readiness (level {_e(doc['target']['featureLevel'])})</p>{notes}</header>",
        '<nav><a href="#overview">overview</a><a href="#findings-by-kind">findings by kind</a>'
        '<a href="#cluster-index">clusters</a></nav>',
        _cards(doc), f'<section class="charts" id="overview-charts">{_charts(doc)}</section>',
        f'<h2 id="findings-by-kind">Findings by kind</h2>{_kinds(doc)}',
        f"<h2>Clusters</h2>{_index(doc)}",
        *(_cluster(c, target) for c in doc["clusters"]),
        "</body></html>\n",
    ))
