"""The migration layer's parsers on random bytes, damaged valid znodes and the text traps (huge
numbers, deep nesting): every znode parser and the dump-line parser return a value or raise the
migration layer's typed error, and allocate no more than their input allows."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.migration.errors import DumpError, ZnodeError
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.tree import ZnodeStat, dump_lines, parse_dump
from kraftwerk.migration.znodes import (
    parse_acls,
    parse_broker,
    parse_cluster_id,
    parse_controller,
    parse_controller_epoch,
    parse_delegation_token,
    parse_entity_config,
    parse_feature,
    parse_migration,
    parse_partition_state,
    parse_producer_id_block,
    parse_reassignments,
    parse_topic,
)
from tests.fuzzing import FUZZ, damaged, parse_or_typed_error
from tests.migration.layout import sample_layout

STAT = ZnodeStat(czxid=16, version=3)
TREE = sample_layout()[0].tree()


def _sample(path: str) -> bytes:
    z = TREE.get(path)
    assert z is not None and z.data
    return z.data


TOKEN = (b'{"version":3,"owner":"User%3Aa","tokenRequester":"User%3Aa","renewers":["User%3Ab"],'
         b'"issueTimestamp":1,"maxTimestamp":3,"expiryTimestamp":2,"tokenId":"t"}')
MIGRATION = (b'{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":2,'
             b'"kraft_metadata_offset":1543,"kraft_metadata_epoch":2}')
REASSIGN = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'

#: Each parser with valid znodes of its kind (the sample cluster's, and hand-written ones).
PARSERS: dict[str, tuple[Callable[[bytes], Any], list[bytes]]] = {
    "cluster id": (lambda d: parse_cluster_id("/cluster/id", d), [_sample("/cluster/id")]),
    "controller": (lambda d: parse_controller("/controller", d), [_sample("/controller")]),
    "controller epoch": (lambda d: parse_controller_epoch("/controller_epoch", d), [b"5"]),
    "broker": (lambda d: parse_broker("/brokers/ids/1", d, STAT), [_sample("/brokers/ids/1")]),
    "topic": (lambda d: parse_topic("/brokers/topics/orders", d), [_sample("/brokers/topics/orders")]),
    "partition state": (lambda d: parse_partition_state("/s", d, STAT),
                        [_sample("/brokers/topics/orders/partitions/1/state"),
                         _sample("/brokers/topics/payments/partitions/0/state")]),
    "reassignments": (lambda d: parse_reassignments("/admin/reassign_partitions", d), [REASSIGN]),
    "config": (lambda d: parse_entity_config("/config/users/alice", d), [_sample("/config/users/alice")]),
    "acls": (lambda d: parse_acls("/kafka-acl/Topic/orders", d), [_sample("/kafka-acl/Topic/orders")]),
    "producer ids": (lambda d: parse_producer_id_block("/latest_producer_id_block", d),
                     [_sample("/latest_producer_id_block")]),
    "token": (lambda d: parse_delegation_token("/delegation_token/tokens/t", d), [TOKEN]),
    "migration": (lambda d: parse_migration("/migration", d, STAT), [MIGRATION]),
    "feature": (lambda d: parse_feature("/feature", d), [_sample("/feature")]),
}


def texts(valid: list[bytes]) -> st.SearchStrategy[bytes]:
    """Random bytes, damaged valid znodes, a number of thousands of digits, deep JSON nesting."""
    digits = st.integers(4000, 6000).map(lambda n: b"9" * n)
    return st.one_of(
        st.binary(max_size=200),
        st.sampled_from(valid).flatmap(damaged),
        st.tuples(st.sampled_from(valid), digits).map(lambda t: t[0].replace(b"1", t[1], 1)),
        st.integers(500, 3000).map(lambda n: b"[" * n + b"]" * n),
        st.integers(500, 3000).map(lambda n: b'{"version":1,"a":' * n + b"1" + b"}" * n),
    )


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_valid_samples_parse(name: str) -> None:
    parse, valid = PARSERS[name]
    for data in valid:
        assert parse(data) is not None


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_znode_parser(name: str, data: st.DataObject) -> None:
    parse, valid = PARSERS[name]
    raw = data.draw(texts(valid))
    parse_or_typed_error(lambda: parse(raw), ZnodeError, len(raw))


DUMP = "\n".join(dump_lines(TREE)).encode()


@FUZZ
@given(raw=texts([DUMP]))
def test_dump_file(raw: bytes) -> None:
    def parse() -> Any:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None  # the CLI and the Spark source refuse it before parsing (read_dump_file)
        return parse_cluster(parse_dump(text.splitlines(), "fuzz.jsonl"))

    parse_or_typed_error(parse, DumpError, len(raw))


@FUZZ
@given(data=st.data())
def test_whole_cluster_state_never_raises(data: st.DataObject) -> None:
    """A damaged znode anywhere in a tree is collected with its path, never raised."""
    z = data.draw(st.sampled_from([z for z in TREE if z.data]))
    broken = data.draw(damaged(z.data or b""))
    lines = [json.dumps({**json.loads(line), "data": broken.decode("latin-1")})
             if json.loads(line)["path"] == z.path else line for line in dump_lines(TREE)]
    state = parse_cluster(parse_dump(lines, "t"))
    assert all(e.path.startswith("/") for e in state.invalid)
