"""KIP-866's ZooKeeper side: reading a large tree from a real ZooKeeper, and translating it.

    python -m bench.bench_migration [--topics 1000] [--partitions 4]

- read: ``migration.reader.read_tree`` (pipelined pages of async requests plus the consistency
  pass) against the peer, a plain recursive read with kazoo's synchronous ``get`` and
  ``get_children`` (no consistency pass), on the same server in the same run;
- translate: ``migration.translate`` + encoding of the records, against the peer, the image writer
  writing the image that the exported snapshot loads into (the same records, at the same version).

Numbers on a shared machine are indicative; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from tests.migration.layout import Layout, sample_layout

from kraftwerk.image.snapshot import SnapshotId
from kraftwerk.image.source import load_snapshot_file
from kraftwerk.image.writer import ImageWriterOptions, write_image
from kraftwerk.migration.reader import connect, read_tree
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.translate import snapshot_file_bytes, translate
from kraftwerk.runtime.zookeeper import ZooKeeperServer
from kraftwerk.versions.metadata_version import MetadataVersion

ROUNDS = 5


def big_layout(topics: int, partitions: int) -> Layout:
    layout, _ = sample_layout()
    for t in range(topics):
        assignment = {p: [(t + p + i) % 3 + 1 for i in range(3)] for p in range(partitions)}
        layout.topic(f"topic-{t:05d}", assignment, topic_id=uuid.UUID(int=t + 1), partition_epoch=t % 3)
        if t % 4 == 0:
            layout.config("topics", f"topic-{t:05d}", {"retention.ms": str(3600000 * (t + 1))})
    return layout


def write_fast(client: KazooClient, layout: Layout) -> None:
    """Create the znodes with pipelined async requests, a tree level at a time (parents first)."""
    by_depth: dict[int, list[Any]] = {}
    for s in layout.specs:
        by_depth.setdefault(s.path.count("/"), []).append(s)
    for depth in sorted(by_depth):
        pending = []
        for s in by_depth[depth]:
            path = s.path.rsplit("_", 1)[0] + "_" if s.sequential else s.path
            pending.append(client.create_async(path, s.data or b"", ephemeral=s.ephemeral,
                                               sequence=s.sequential))
        for p in pending:
            p.get()
        sets = [client.set_async(s.path, s.data or b"") for s in by_depth[depth] for _ in range(s.updates)]
        for p in sets:
            p.get()


def sequential_read(client: KazooClient, path: str = "/") -> int:
    client.get(path)
    count = 1
    for child in client.get_children(path):
        if path == "/" and child == "zookeeper":
            continue
        count += sequential_read(client, f"{path.rstrip('/')}/{child}")
    return count


def best(*funcs: Any) -> list[float]:
    """The best time of each function over ``ROUNDS`` rounds, the functions taking turns in every round
    so that load from other processes hits them alike."""
    times: list[list[float]] = [[] for _ in funcs]
    for _ in range(ROUNDS):
        for i, func in enumerate(funcs):
            start = time.perf_counter()
            func()
            times[i].append(time.perf_counter() - start)
    return [min(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    layout = big_layout(args.topics, args.partitions)
    mv = MetadataVersion.IBP_3_9_IV0
    with tempfile.TemporaryDirectory() as tmp, ZooKeeperServer(Path(tmp) / "zk") as zk:
        client = KazooClient(hosts=zk.connect_string)
        client.start(10)
        write_fast(client, layout)
        with connect(zk.connect_string) as reader:
            tree = read_tree(reader)
            paged, plain = best(lambda: read_tree(reader), lambda: sequential_read(reader))
        client.stop()
        client.close()
        state = parse_cluster(tree)
        result = translate(state, mv)
        records = len(result.snapshot_records())
        data, sid = snapshot_file_bytes(result, 0)
        snap = Path(tmp) / SnapshotId(sid.end_offset, sid.epoch).file_name
        snap.write_bytes(data)
        image = load_snapshot_file(snap)
        ours, peer = best(lambda: snapshot_file_bytes(translate(state, mv), 0),
                          lambda: [r.encode() for r in write_image(image, ImageWriterOptions(mv)).records])
    print(json.dumps({
        "znodes": len(tree), "records": records,
        "read": {"pagedSeconds": round(paged, 3), "sequentialSeconds": round(plain, 3),
                 "znodesPerSecond": round(len(tree) / paged), "speedup": round(plain / paged, 2)},
        "translate": {"seconds": round(ours, 3), "recordsPerSecond": round(records / ours),
                      "imageWriterSeconds": round(peer, 3), "vsImageWriter": round(peer / ours, 2)},
    }, indent=1))


if __name__ == "__main__":
    main()
