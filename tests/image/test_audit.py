"""KIP-1294's audit of an image (``audit_image``): every effective value, with Kafka's precedence, against
the rules in force at a level -- including the KIP's worked example and its remedy."""

from __future__ import annotations

from kraftwerk.config.resolve import ConfigSource
from kraftwerk.image.audit import audit_image
from kraftwerk.image.model import MetadataImage
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.image.helpers import mv_record, rec, replay, uid

L43 = MV.IBP_4_3_IV0.feature_level
L44 = MV.IBP_4_4_IV1.feature_level


def _broker(broker_id: int, static: dict[str, str | None] | None = None) -> list[object]:
    statics = [{"name": n, "value": v} for n, v in (static or {}).items()]
    return [rec("RegisterBrokerRecord", 5, brokerId=broker_id, incarnationId=uid(broker_id), brokerEpoch=10,
                staticConfigs=statics),
            rec("UnfenceBrokerRecord", id=broker_id, epoch=10)]


def _config(rtype: int, name: str, key: str, value: str) -> object:
    return rec("ConfigRecord", resourceType=rtype, resourceName=name, name=key, value=value)


def _image(*records: object) -> MetadataImage:
    return replay([mv_record(MV.IBP_4_4_IV1), *records])  # type: ignore[list-item]


def _found(image: MetadataImage, level: int) -> list[tuple[str, str, str | None, str]]:
    return [(f.subject, f.violation.value, f.violation.origin and f.violation.origin.name,
             f.violation.message()) for f in audit_image(image, level)]


def test_the_kips_worked_example() -> None:
    """node-3's server.properties holds log.segment.bytes=2048: fine until 4.4-IV1, whose 3 MiB minimum
    it breaks; a cluster-wide dynamic override (no file edited, no restart) makes the upgrade pass."""
    brokers = [*_broker(1, {"log.segment.bytes": "1073741824"}), *_broker(3, {"log.segment.bytes": "2048"})]
    image = _image(*brokers)
    assert _found(image, L43) == [("broker 3 log.segment.bytes", "2048", "STATIC_BROKER_CONFIG",
                                   "Invalid value 2048 for configuration log.segment.bytes: Value must be at "
                                   "least 1048576 (since metadata.version 4.0-IV0)")]
    assert _found(image, L44)[0][3].endswith("at least 3145728 (since metadata.version 4.4-IV1)")
    fixed = _image(*brokers, _config(4, "", "log.segment.bytes", "3145728"))
    assert _found(fixed, L44) == []
    # a broker's own dynamic value beats the cluster default
    again = _image(*brokers, _config(4, "", "log.segment.bytes", "3145728"),
                   _config(4, "1", "log.segment.bytes", "2097152"))
    assert [f[:3] for f in _found(again, L44)] == [
        ("broker 1 log.segment.bytes", "2097152", "DYNAMIC_BROKER_CONFIG")]


def test_topics_defaults_stale_brokers_and_secrets() -> None:
    image = _image(
        *_broker(1), *_broker(2),
        _config(2, "orders", "segment.bytes", "2097152"),
        _config(2, "orders", "retention.ms", "86400000"),
        _config(4, "", "remote.log.manager.copier.thread.pool.size", "-1"),
        _config(4, "9", "log.segment.bytes", "100"),  # broker 9 left the cluster, its configs stayed
        _config(4, "2", "num.io.threads", "0"),  # breaks the base rule (no metadata.version involved)
        _config(4, "1", "ssl.keystore.password", "-1"),  # a secret is never read
        _config(4, "1", "some.plugin.setting", "x"),  # a name the catalogue does not know
    )
    found = {f.subject: f for f in audit_image(image, L44)}
    assert sorted(found) == ["broker 2 num.io.threads", "broker 9 log.segment.bytes",
                             "cluster default remote.log.manager.copier.thread.pool.size",
                             "topic orders segment.bytes"]
    shared = found["cluster default remote.log.manager.copier.thread.pool.size"]
    assert shared.violation.origin is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG  # once, not once per broker
    assert found["broker 2 num.io.threads"].violation.level is None
    assert found["topic orders segment.bytes"].to_json()["sinceMetadataVersion"] == "4.4-IV1"
    assert {f.subject for f in audit_image(image, L43)} == set(found) - {"topic orders segment.bytes"}
