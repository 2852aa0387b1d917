"""The image writer's finer points (``image/writer.py``): exact record values Kafka writes, the order
of quotas, feature levels around a dependency loss, the ZooKeeper migration state around 4.0-IV0,
loss texts with several entries, deduplicated losses, the logged drops, and the guard against a
field the record does not have."""

from __future__ import annotations

import logging

import pytest

from kraftwerk.image.errors import ImageError
from kraftwerk.image.model import EMPTY_IMAGE
from kraftwerk.image.writer import ImageWriterOptions, LossPolicy, _shape, image_losses, write_image
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.image.helpers import as_tuples, mv_record, rec, replay, reread, uid


def _drop(image, mv):  # type: ignore[no-untyped-def]
    return write_image(image, ImageWriterOptions(mv, LossPolicy.DROP))


def test_producer_ids_are_written_as_kafkas_producer_ids_image_does() -> None:
    image = replay([mv_record(MV.IBP_4_3_IV0), rec("ProducerIdsRecord", brokerId=3, brokerEpoch=9,
                                                   nextProducerId=5000)])
    records = as_tuples(reread(write_image(image)))
    assert records[-1] == ("ProducerIdsRecord", 0,
                           {"brokerId": -1, "brokerEpoch": -1, "nextProducerId": 5000})


def test_every_field_of_brokers_controllers_and_partitions_is_written() -> None:
    broker = dict(brokerId=4, incarnationId=uid(4), brokerEpoch=77, rack="r1", fenced=False,
                  endPoints=[{"name": "SSL", "host": "h", "port": 9093, "securityProtocol": 1}],
                  features=[{"name": "metadata.version", "minSupportedVersion": 7,
                             "maxSupportedVersion": 30}])
    controller = dict(controllerId=1, incarnationId=uid(1), zkMigrationReady=True,
                      endPoints=[{"name": "CONTROLLER", "host": "c", "port": 9094, "securityProtocol": 3}],
                      features=[{"name": "kraft.version", "minSupportedVersion": 0,
                                 "maxSupportedVersion": 1}])
    partition = dict(partitionId=0, topicId=uid(9), replicas=[4, 5, 6], isr=[4], removingReplicas=[6],
                     addingReplicas=[5], leader=4, leaderEpoch=3, partitionEpoch=8,
                     directories=[uid(10), uid(11), uid(12)])
    image = replay([mv_record(MV.IBP_4_3_IV0), rec("RegisterBrokerRecord", 4, logDirs=[uid(13)], **broker),
                    rec("RegisterControllerRecord", 0, **controller),
                    rec("TopicRecord", name="t", topicId=uid(9)),
                    rec("PartitionRecord", 2, **partition)])
    written = {name: value for name, _, value in as_tuples(reread(write_image(image)))}
    assert written["RegisterBrokerRecord"]["endPoints"] == broker["endPoints"]
    assert written["RegisterBrokerRecord"]["features"] == broker["features"]
    assert written["RegisterControllerRecord"] == {**controller, **{
        k: v for k, v in written["RegisterControllerRecord"].items() if k not in controller}}
    for key in ("removingReplicas", "addingReplicas", "replicas", "isr", "directories"):
        assert written["PartitionRecord"][key] == partition[key], key


def test_write_at_a_version_given_directly_or_the_images_own() -> None:
    image = replay([mv_record(MV.IBP_4_2_IV1), rec("TopicRecord", name="t", topicId=uid(1))])
    by_version = write_image(image, MV.IBP_4_1_IV1)
    assert by_version.metadata_version is MV.IBP_4_1_IV1
    by_options = write_image(image, ImageWriterOptions(MV.IBP_4_1_IV1))
    assert as_tuples(reread(by_version)) == as_tuples(reread(by_options))
    assert write_image(image).metadata_version is MV.IBP_4_2_IV1
    text = r"^the image has no metadata\.version; give the version to write it at$"
    with pytest.raises(ImageError, match=text):
        write_image(EMPTY_IMAGE)


def test_metadata_version_3_3_iv0_is_the_first_with_feature_level_records() -> None:
    image = replay([mv_record(MV.IBP_3_3_IV0)])
    assert as_tuples(reread(write_image(image))) == as_tuples([mv_record(MV.IBP_3_3_IV0)])
    old = replay([mv_record(MV.IBP_3_3_IV0), rec("FeatureLevelRecord", name="b.feature", featureLevel=1),
                  rec("FeatureLevelRecord", name="a.feature", featureLevel=2)])
    assert _drop(old, MV.IBP_3_2_IV0).losses == ("feature flag(s): a.feature, b.feature",)


def test_a_feature_lost_to_its_dependency_does_not_take_the_next_one_with_it() -> None:
    image = replay([mv_record(MV.IBP_4_1_IV0),
                    rec("FeatureLevelRecord", name="eligible.leader.replicas.version", featureLevel=1),
                    rec("FeatureLevelRecord", name="group.version", featureLevel=1)])
    result = _drop(image, MV.IBP_4_0_IV0)
    assert result.losses == ("the feature flag eligible.leader.replicas.version=1, which depends on "
                             "metadata.version level 23",)
    group = ("FeatureLevelRecord", 0, {"name": "group.version", "featureLevel": 1})
    assert group in as_tuples(reread(result))


@pytest.mark.parametrize(("mv", "state", "written"), [
    (MV.IBP_3_9_IV0, 0, True),  # 3.x writes NONE too
    (MV.IBP_4_0_IV0, 0, False),  # 4.x stopped writing NONE
    (MV.IBP_4_0_IV0, 3, True),  # ... but keeps a migration that happened
])
def test_zk_migration_state_record(mv: MV, state: int, written: bool) -> None:
    image = replay([mv_record(MV.IBP_4_0_IV0), rec("ZkMigrationStateRecord", zkMigrationState=state)])
    records = as_tuples(reread(write_image(image, mv)))
    expected = ("ZkMigrationStateRecord", 0, {"zkMigrationState": state})
    assert (expected in records) is written


def test_quotas_are_written_in_a_stable_order_default_entities_after_empty_names() -> None:
    def quota(name: str | None) -> object:
        return rec("ClientQuotaRecord", entity=[{"entityType": "user", "entityName": name}],
                   key="producer_byte_rate", value=1.0, remove=False)

    image = replay([mv_record(MV.IBP_4_3_IV0), quota("a"), quota(None), quota("A"), quota("")])  # type: ignore[list-item]
    names = [v["entity"][0]["entityName"] for n, _, v in as_tuples(reread(write_image(image)))
             if n == "ClientQuotaRecord"]
    assert names == ["", None, "A", "a"]


def test_loss_texts_list_every_user_and_token() -> None:
    scram = [rec("UserScramCredentialRecord", name=user, mechanism=mech, salt=b"s", storedKey=b"k",
                 serverKey=b"v", iterations=4096) for user, mech in (("bob", 1), ("alice", 1), ("carol", 2))]
    tokens = [rec("DelegationTokenRecord", owner="User:a", requester="User:a", renewers=[], issueTimestamp=1,
                  maxTimestamp=2, expirationTimestamp=2, tokenId=t) for t in ("t2", "t1")]
    image = replay([mv_record(MV.IBP_3_6_IV2), *scram, *tokens])
    assert _drop(image, MV.IBP_3_6_IV1).losses == ("DelegationTokenImage(t1, t2)",)
    assert _drop(image, MV.IBP_3_5_IV0).losses == (
        "ScramImage({SCRAM_SHA_256:alice, bob},{SCRAM_SHA_512:carol},{})", "DelegationTokenImage(t1, t2)")


def test_each_loss_is_reported_once_and_logged_when_dropped(caplog: pytest.LogCaptureFixture) -> None:
    brokers = [rec("RegisterBrokerRecord", 1, brokerId=b, incarnationId=uid(b), brokerEpoch=1, rack=None,
                   fenced=False, inControlledShutdown=True) for b in (1, 2)]
    image = replay([mv_record(MV.IBP_3_3_IV3), *brokers])
    assert image_losses(image, MV.IBP_3_3_IV2) == ("the inControlledShutdown state of one or more brokers",)
    with caplog.at_level(logging.INFO, "kraftwerk.image.writer"):
        _drop(image, MV.IBP_3_3_IV2)
    assert caplog.messages == ["Dropping metadata that metadata.version 3.3-IV2 cannot represent: the "
                               "inControlledShutdown state of one or more brokers"]


def test_shape_refuses_what_the_record_version_cannot_hold() -> None:
    spec = lookup_record("RegisterBrokerRecord")
    assert _shape(spec, 2, {"brokerId": 1, "logDirs": []}) == {"brokerId": 1}  # empty: nothing lost
    assert _shape(spec, 3, {"brokerId": 1, "logDirs": [uid(1)]}) == {"brokerId": 1, "logDirs": [uid(1)]}
    assert _shape(spec, 0, {"inControlledShutdown": False}) == {}  # the default: nothing lost
    with pytest.raises(AssertionError, match="RegisterBrokerRecord v2 cannot hold logDirs="):
        _shape(spec, 2, {"logDirs": [uid(1)]})
    with pytest.raises(AssertionError, match="RegisterBrokerRecord v0 cannot hold inControlledShutdown=True"):
        _shape(spec, 0, {"inControlledShutdown": True})
    with pytest.raises(AssertionError, match=r"^RegisterBrokerRecord has no field\(s\) brokerid, rackid$"):
        _shape(spec, 3, {"rackid": "r", "brokerid": 1})
