"""The data client's partitioner is Kafka's: murmur2 checked against kafka-python's port of it, and
against values Kafka's Java ``Utils.murmur2`` gives (its own unit test, UtilsTest.testMurmur2)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwerk.runtime.data_client import default_partition, murmur2


@settings(deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_is_kafkas(data: bytes) -> None:
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data) & 0xFFFFFFFF


def test_default_partition() -> None:
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

    for i in range(200):
        key = b"key-%d" % i
        assert default_partition(key, 6) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % 6
    assert 0 <= default_partition(b"", 3) < 3


def test_murmur2_values_of_kafkas_own_unit_test() -> None:
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    assert {k: murmur2(k) for k in cases} == cases
