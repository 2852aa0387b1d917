"""Stress check that no acks=all record is lost while ZooKeeper-mode brokers roll or migrate (not in
the suite: each run is a real cluster for a minute or more).

Each run: ``cluster up --zookeeper`` (3 brokers), a kafka-python producer with acks=all recording
every acknowledged (partition, offset, value), then ``cluster migrate`` (``--mode migrate``) or a
``cluster roll`` of each ZK broker in turn (``--mode roll``), then every acknowledged offset is read
back by offset and compared; the AlterPartition resends in the nodes' logs are counted (whether the
run went through a lost or refused ISR change). Usage::

    PYTHONPATH=src python scripts/stress_acked_loss.py --mode migrate --runs 5
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.cluster.helpers import acked_missing, cli, cluster_up

TOPIC, PARTITIONS = "stress", 3


def one_run(mode: str, run: int) -> tuple[int, int]:
    """Returns (acknowledged, lost or changed)."""
    from kafka import KafkaProducer

    tmp = tempfile.mkdtemp(prefix="stress-loss-")
    with cluster_up(Path(tmp), "--zookeeper", "--brokers", "3",
                       "--config", "zookeeper.session.timeout.ms=6000") as cluster:
        with AdminClient(cluster.bootstrap_servers.split(",")[0]) as admin:
            body = {"topics": [{"name": TOPIC, "numPartitions": PARTITIONS, "replicationFactor": 3,
                                "assignments": [], "configs": []}], "timeoutMs": 15000, "validateOnly": False}
            assert admin.call(19, body)["topics"][0]["errorCode"] == 0
        bootstrap = cluster.bootstrap_servers
        acked: dict[tuple[int, int], bytes] = {}
        errors: list[BaseException] = []
        stop = threading.Event()

        def keep_producing() -> None:
            producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=100,
                                     retry_backoff_ms=300, max_in_flight_requests_per_connection=1,
                                     request_timeout_ms=15_000)
            batch = 0
            while not stop.is_set():
                values = [b"r%d-b%d-%d" % (run, batch, i) for i in range(20)]
                futures = [(v, producer.send(TOPIC, value=v, partition=i % PARTITIONS))
                           for i, v in enumerate(values)]
                producer.flush()
                for v, f in futures:
                    try:
                        md = f.get(timeout=60)
                    except Exception as exc:  # not acknowledged: not owed
                        errors.append(exc)
                        continue
                    acked[(md.partition, md.offset)] = v
                batch += 1
            producer.close()

        thread = threading.Thread(target=keep_producing)
        thread.start()
        try:
            if mode == "migrate":
                code, _, err = cli("cluster", "migrate", "--dir", str(cluster.root))
                assert code == 0, err
            else:
                for node in cluster.nodes:
                    code, _, err = cli("cluster", "roll", "--dir", str(cluster.root), "--node",
                                       str(node.node_id))
                    assert code == 0, err
            time.sleep(1)
        finally:
            stop.set()
            thread.join(180)
        final = LocalCluster.load(cluster.root)
        bad = acked_missing(final.bootstrap_servers, TOPIC, acked)
        resent = sum(line.endswith(", retrying") or "AlterPartition got no answer" in line
                     for node in final.nodes if node.log_path(final.root).exists()
                     for line in node.log_path(final.root).read_text(errors="replace").splitlines())
        print(f"run {run} ({mode}): {len(acked)} acknowledged, {len(bad)} lost or changed, "
              f"{len(errors)} sends failed, {resent} AlterPartition resends", flush=True)
        if bad:
            print(f"  first lost: {[(k, acked[k]) for k in bad[:10]]}", flush=True)
            print(f"  the cluster's logs are kept in {tmp}", flush=True)
    if not bad:
        shutil.rmtree(tmp, ignore_errors=True)
    return len(acked), len(bad)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("migrate", "roll"), default="migrate")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lost_runs = 0
    for run in range(args.runs):
        _, bad = one_run(args.mode, run)
        lost_runs += bad > 0
    print(f"{args.mode}: {args.runs} runs, {lost_runs} with loss")
    return 1 if lost_runs else 0


if __name__ == "__main__":
    sys.exit(main())
