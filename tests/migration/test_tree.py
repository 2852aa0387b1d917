"""Dump files: every znode (any bytes, any stat) survives a dump, and a bad line names its place."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwerk.migration.errors import DumpError
from kraftwerk.migration.tree import ZkTree, Znode, ZnodeStat, dump_lines, parse_dump

STATS = st.builds(ZnodeStat, *[st.integers(0, 2**63 - 1)] * 11)
NAMES = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=["Cs"]), min_size=1,
                max_size=6)


@settings(max_examples=100, deadline=None)
@given(nodes=st.dictionaries(st.lists(NAMES, min_size=1, max_size=3).map(lambda p: "/" + "/".join(p)),
                             st.tuples(st.none() | st.binary(max_size=40), STATS), min_size=1, max_size=8)
       .filter(lambda nodes: not any(p.split("/")[1] == "zookeeper" for p in nodes)))
def test_dump_round_trip(nodes: dict[str, tuple[bytes | None, ZnodeStat]]) -> None:
    tree = ZkTree(Znode(p, d, s) for p, (d, s) in nodes.items())
    back = parse_dump(list(dump_lines(tree)), "t")
    assert list(back) == list(tree)


@pytest.mark.parametrize(("line", "why"), [
    ("{oops", "Expecting"), ("[]", "not a JSON object"), ('{"path":"rel"}', "no absolute 'path'"),
    ('{"path":"/a","dataBase64":"***"}', "not base64"),
    ('{"path":"/a","stat":{"version":"1"}}', "not an integer"),
    ('{"path":"/a","data":7}', "neither a string nor null"),
])
def test_bad_lines_are_named(line: str, why: str) -> None:
    with pytest.raises(DumpError, match=rf"^d.jsonl:2: not a znode record of a migration dump: .*{why}"):
        parse_dump(['{"path":"/ok","data":null}', line], "d.jsonl")


def test_a_path_twice_is_refused() -> None:
    with pytest.raises(DumpError, match="/a: appears twice"):
        parse_dump(['{"path":"/a"}', '{"path":"/a"}'], "d.jsonl")
