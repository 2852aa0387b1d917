"""The dual write's znodes: what KRaft writes, the migration reads back as the same metadata; and the
plan of writes between two views (order, what is never deleted, notifications)."""

from __future__ import annotations

import dataclasses
import json
import uuid

from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.image.model import DelegationToken, MetadataImage
from kraftwerk.migration.dual_write import ZnodeOp, delta_plan, full_plan, image_view, plan, zookeeper_view
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.translate import translate
from kraftwerk.migration.tree import ZkTree, Znode, ZnodeStat
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.image.helpers import rec, replay
from tests.migration.layout import sample_layout

MV = MetadataVersion.IBP_3_9_IV0


def image_of(tree: ZkTree) -> MetadataImage:
    translation = translate(parse_cluster(tree), MV)
    return replay(MetadataRecord(r.spec, r.version, r.value) for r in translation.snapshot_records())


def applied(ops: list[ZnodeOp], base: ZkTree) -> ZkTree:
    """``base`` after ``ops``, as ZooKeeper would apply them (a create needs its parent, a delete an
    empty znode)."""
    nodes = {z.path: z.data for z in base}
    for n, op in enumerate(ops):
        parent = op.path.rsplit("/", 1)[0]
        if op.kind == "create":
            assert op.path not in nodes and (not parent or parent in nodes), op
            nodes[op.path] = op.data
        elif op.kind == "set":
            assert op.path in nodes, op
            nodes[op.path] = op.data
        elif op.kind == "delete":
            assert not [p for p in nodes if p.startswith(op.path + "/")], op
            del nodes[op.path]
        else:
            nodes[f"{op.path}{n:010d}"] = op.data
    return ZkTree([Znode(p, d, ZnodeStat()) for p, d in nodes.items()])


def comparable(image: MetadataImage) -> tuple[object, ...]:
    topics = {t.name: (t.id, {p: (r.replicas, r.isr, r.leader, r.leader_epoch, r.leader_recovery_state)
                              for p, r in t.partitions.items()}) for t in image.topics.by_id.values()}
    configs = {k: dict(v) for k, v in image.configs.items() if k.type in (2, 4)}
    acls = sorted(map(repr, image.acls.values()))
    return topics, configs, acls, dict(image.client_quotas), dict(image.scram), image.producer_ids_next


def test_what_kraft_writes_the_migration_reads_back() -> None:
    layout, _ = sample_layout()
    zk = layout.tree()
    image = image_of(zk)
    view = image_view(image, controller_epoch=9)
    again = image_of(applied(full_plan(zookeeper_view(zk), image, controller_epoch=9), zk))
    assert comparable(again)[:5] == comparable(image)[:5]
    assert image.scram and image.client_quotas
    # the producer id block restarts at KRaft's next id: a rollback never reuses an id
    assert again.producer_ids_next >= image.producer_ids_next
    assert json.loads(view["/brokers/topics/orders/partitions/0/state"] or b"")["controller_epoch"] == 9


def test_full_sync_of_an_unchanged_tree_writes_only_what_kraft_spells_differently() -> None:
    """Partition states take the new controller epoch, the producer id block and quotas KRaft's form
    (doubles: "1048576.0", as Kafka's dual write), and a topic without a config znode gets one (Kafka
    creates one per topic); nothing else moves, and no ACL changed, so no ACL notification."""
    layout, _ = sample_layout()
    zk = layout.tree()
    ops = full_plan(zookeeper_view(zk), image_of(zk), controller_epoch=9)
    sets = {op.path for op in ops if op.kind == "set"}
    quotas = {"/config/users/alice", "/config/users/<default>", "/config/clients/reporting",
              "/config/users/bob%40EX.COM/clients/app1"}
    states = {p for p in zookeeper_view(zk) if p.endswith("/state")}
    assert sets == {"/latest_producer_id_block"} | quotas | states
    # the test tree has no ACL change stores (a 3.x AclAuthorizer creates them at start-up)
    assert [op.path for op in ops if op.kind == "create"] == [
        "/config/topics/payments", "/kafka-acl-changes", "/kafka-acl-extended-changes"]
    notified = {json.loads(op.data or b"")["entity_path"] for op in ops if op.kind == "notify"}
    assert notified == {"topics/payments", "users/alice", "users/<default>", "clients/reporting",
                        "users/bob%40EX.COM/clients/app1"}


def test_a_topic_deleted_in_kraft_is_deleted_children_first_and_parents_are_never_deleted() -> None:
    layout, _ = sample_layout()
    zk = layout.tree()
    image = image_of(zk)
    audit = image.topics.by_name["audit"]
    topics = dataclasses.replace(image.topics, by_id=image.topics.by_id.delete(audit.id),
                                 by_name=image.topics.by_name.delete("audit"))
    gone = dataclasses.replace(image, topics=topics,
        configs=image.configs.delete(next(k for k in image.configs if k.name == "audit")))
    ops = delta_plan(image, gone, controller_epoch=9)
    deletes = [op.path for op in ops if op.kind == "delete"]
    assert deletes == ["/config/topics/audit", "/brokers/topics/audit/partitions/1/state",
                       "/brokers/topics/audit/partitions/1", "/brokers/topics/audit/partitions/0/state",
                       "/brokers/topics/audit/partitions/0", "/brokers/topics/audit/partitions",
                       "/brokers/topics/audit"]
    assert ZnodeOp("notify", "/config/changes/config_change_",
                   b'{"version":2,"entity_path":"topics/audit"}') in ops
    full = full_plan(zookeeper_view(zk), gone, controller_epoch=9)
    assert set(deletes) <= {op.path for op in full if op.kind == "delete"}
    assert "audit" not in parse_cluster(applied(full, zk)).topics
    parents = {"/brokers/topics", "/config/topics", "/kafka-acl", "/kafka-acl/Topic"}
    assert not {op.path for op in full if op.kind == "delete"} & parents


def test_a_new_topic_is_created_parents_first_with_its_config_and_no_other_topic_is_touched() -> None:
    layout, _ = sample_layout()
    image = image_of(layout.tree())
    orders = image.topics.by_name["orders"]
    new = dataclasses.replace(orders, name="fresh", id=uuid.UUID(int=7))
    topics = dataclasses.replace(image.topics, by_id=image.topics.by_id.set(new.id, new),
                                 by_name=image.topics.by_name.set("fresh", new))
    grown = dataclasses.replace(image, topics=topics)
    ops = delta_plan(image, grown, controller_epoch=9)
    paths = [op.path for op in ops if op.kind == "create"]
    assert paths[0] == "/brokers/topics/fresh" and "/config/topics/fresh" in paths
    assert paths.index("/brokers/topics/fresh/partitions") < paths.index("/brokers/topics/fresh/partitions/0")
    assert all("orders" not in op.path for op in ops)
    assert [op.kind for op in ops].count("set") == 0


def test_plan_creates_missing_structural_parents_and_compares_json_not_bytes() -> None:
    before: dict[str, bytes | None] = {"/config": None, "/config/topics": None,
                                       "/config/topics/a": b'{"config":{},"version":1}'}
    after = {"/config/topics/a": b'{"version":1,"config":{}}', "/kafka-acl-extended/prefixed/Group/x": b"{}",
             "/kafka-acl-extended-changes": None}
    ops = plan(before, after)
    assert [(op.kind, op.path) for op in ops] == [
        ("create", "/kafka-acl-extended"), ("create", "/kafka-acl-extended-changes"),
        ("create", "/kafka-acl-extended/prefixed"), ("create", "/kafka-acl-extended/prefixed/Group"),
        ("create", "/kafka-acl-extended/prefixed/Group/x"),
        ("notify", "/kafka-acl-extended-changes/acl_changes_")]
    assert json.loads(ops[-1].data or b"") == {"version": 1, "resourceType": "GROUP", "name": "x",
                                               "patternType": "PREFIXED"}


def test_a_users_quota_removed_while_a_client_of_it_keeps_one_empties_the_user_znode() -> None:
    layout, _ = sample_layout()
    zk = layout.tree()
    image = image_of(zk)
    bob = (("user", "bob@EX.COM"),)
    quotas = image.client_quotas.set(bob, {"producer_byte_rate": 1.0})
    with_bob = dataclasses.replace(image, client_quotas=quotas)
    ops = delta_plan(with_bob, image, controller_epoch=9)
    assert [(op.kind, op.path, op.data) for op in ops if op.kind != "notify"] == [
        ("set", "/config/users/bob%40EX.COM", b'{"version":1,"config":{}}')]
    after = parse_cluster(applied(full_plan(zookeeper_view(zk), with_bob, 9), zk))
    assert after.entity_configs("users")["bob%40EX.COM"] == {"producer_byte_rate": "1.0"}
    assert after.user_client_configs[("bob%40EX.COM", "app1")] == {"producer_byte_rate": "4096.0"}


def test_delegation_tokens_are_written_and_read_back() -> None:
    layout, _ = sample_layout()
    zk = layout.tree()
    image = image_of(zk)
    token = DelegationToken("tok-1", "User:alice", "User:admin", ("User:bob",), 1000, 9000, 5000)
    with_token = dataclasses.replace(image, delegation_tokens=image.delegation_tokens.set("tok-1", token))
    [read] = parse_cluster(applied(full_plan(zookeeper_view(zk), with_token, 9), zk)).delegation_tokens
    assert (read.token_id, read.owner, read.requester, read.renewers) == ("tok-1", "User:alice", "User:admin",
                                                                         ("User:bob",))
    assert (read.issue_timestamp, read.max_timestamp, read.expiry_timestamp) == (1000, 9000, 5000)
    ops = delta_plan(with_token, image, controller_epoch=9)
    assert [(op.kind, op.path) for op in ops] == [("delete", "/delegation_token/tokens/tok-1")]


_ROOTS: dict[str, bytes | None] = {"/brokers": None, "/brokers/topics": None, "/config": None,
                                   "/config/topics": None, "/config/changes": None}


def _views() -> st.SearchStrategy[dict[str, bytes | None]]:
    """A managed view: topics with partitions and states, and topic configs, with varying data."""
    topic = st.tuples(st.sampled_from("abcd"), st.sets(st.integers(0, 2), max_size=3), st.integers(0, 3),
                      st.booleans())

    def build(topics: list[tuple[str, set[int], int, bool]]) -> dict[str, bytes | None]:
        view: dict[str, bytes | None] = {}
        for name, parts, leader, configured in topics:
            base = f"/brokers/topics/{name}"
            view[base] = json.dumps({"version": 3, "partitions": {str(p): [leader] for p in parts}}).encode()
            if parts:
                view[base + "/partitions"] = None
            for p in parts:
                view[f"{base}/partitions/{p}"] = None
                view[f"{base}/partitions/{p}/state"] = json.dumps({"leader": leader, "version": 1}).encode()
            if configured:
                config = {"version": 1, "config": {"x": str(leader)}}
                view[f"/config/topics/{name}"] = json.dumps(config).encode()
        return view

    return st.lists(topic, max_size=4, unique_by=lambda t: t[0]).map(build)


@given(_views(), _views())
def test_any_plan_applies_cleanly_and_leaves_exactly_the_wanted_znodes(
        before: dict[str, bytes | None], after: dict[str, bytes | None]) -> None:
    base = ZkTree([Znode(p, d, ZnodeStat()) for p, d in {**_ROOTS, **before}.items()])
    ops = plan({**_ROOTS, **before}, {**_ROOTS, **after})
    result = {z.path: z.data for z in applied(ops, base)}  # raises on a create without parent, ...
    for path, data in after.items():
        assert path in result and json.loads(result[path] or b"{}") == json.loads(data or b"{}")
    leftovers = {p for p in result
                 if p not in after and p not in _ROOTS and not p.startswith("/config/changes/")}
    assert not leftovers
    touched = {op.path.removeprefix("/config/topics/") for op in ops if op.path.startswith("/config/topics/")}
    notes = {json.loads(op.data or b"")["entity_path"] for op in ops if op.kind == "notify"}
    assert notes == {f"topics/{t}" for t in touched}


def test_a_leader_change_writes_only_that_partitions_state() -> None:
    """Replay keeps unchanged maps as the same objects, so a delta renders only what it touched."""
    layout, ids = sample_layout()
    image = image_of(layout.tree())
    moved = replay([rec("PartitionChangeRecord", partitionId=1, topicId=ids["orders"], leader=3)], image)
    assert moved.configs is image.configs and moved.acls is image.acls
    ops = delta_plan(image, moved, controller_epoch=9)
    assert [(op.kind, op.path) for op in ops] == [("set", "/brokers/topics/orders/partitions/1/state")]
    assert json.loads(ops[0].data or b"")["leader"] == 3

