"""The runtime's parsers on random bytes, bit flips and truncations: request and response frames
(what a socket hands the server and the client), the frame size prefix, KIP-590's Envelope (the
principal and the embedded response), ``server.properties`` and ``bootstrap.servers``. Each
returns a value or raises the runtime's typed error, and allocates no more than its input allows."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.config.errors import ConfigError
from kraftwerk.controller.common import declared_api_ranges
from kraftwerk.controller.quorum import CONTROLLER_API_KEYS
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.runtime import framing
from kraftwerk.runtime.admin_client import AdminClientError, parse_bootstrap
from kraftwerk.runtime.config import ServerConfig
from kraftwerk.runtime.errors import NetworkError, RuntimeLayerError
from kraftwerk.runtime.forwarding import deserialize_principal, serialize_principal, unwrap_response
from tests.fuzzing import FUZZ, damaged, parse_or_typed_error

SUPPORTED = declared_api_ranges(CONTROLLER_API_KEYS)
UPDATE_FEATURES = {"timeoutMs": 60000, "validateOnly": True, "featureUpdates": [
    {"feature": "metadata.version", "maxVersionLevel": 30, "upgradeType": 1}]}
REQUESTS = [
    framing.encode_request(57, 1, 7, "adminclient-1", UPDATE_FEATURES)[4:],
    framing.encode_request(18, 4, 8, "c", {"clientSoftwareName": "k", "clientSoftwareVersion": "1"})[4:],
    framing.encode_request(18, 0, 9, None, {})[4:],
    framing.encode_request(60, 2, 10, "c", {"includeClusterAuthorizedOperations": False,
                                            "endpointType": 2, "includeFencedBrokers": True})[4:],
]


@FUZZ
@given(st.one_of(st.binary(max_size=200), st.sampled_from(REQUESTS).flatmap(damaged)))
def test_request_frames(frame: bytes) -> None:
    parsed = parse_or_typed_error(lambda: framing.parse_request(frame, SUPPORTED), NetworkError, len(frame))
    if parsed is not None and not parsed.unsupported_api_versions:
        low, high = SUPPORTED[parsed.header.api_key]
        assert low <= parsed.header.api_version <= high


RESPONSES = [
    (18, 3, framing.encode_response(18, 3, 7, {"errorCode": 0, "apiKeys": [
        {"apiKey": 18, "minVersion": 0, "maxVersion": 4}], "finalizedFeaturesEpoch": 9})[4:]),
    (57, 2, framing.encode_response(57, 2, 8, {"errorCode": 95, "errorMessage": "no"})[4:]),
]


@FUZZ
@given(st.sampled_from(RESPONSES).flatmap(lambda r: st.tuples(st.just(r[0]), st.just(r[1]), damaged(r[2]))))
def test_response_frames(case: tuple[int, int, bytes]) -> None:
    api_key, version, frame = case
    decode = framing.parse_response
    parse_or_typed_error(lambda: decode(frame, api_key, version), NetworkError, len(frame))
    parse_or_typed_error(lambda: framing.peek_correlation_id(frame), NetworkError, len(frame))


@FUZZ
@given(st.binary(min_size=4, max_size=4))
def test_frame_size_prefix(prefix: bytes) -> None:
    size = framing.SIZE.unpack(prefix)[0]
    parse_or_typed_error(lambda: framing.check_frame_size(size, framing.DEFAULT_MAX_FRAME_BYTES),
                         NetworkError, 4)


@FUZZ
@given(st.one_of(st.binary(max_size=60), st.just(serialize_principal("User", "alice")).flatmap(damaged)))
def test_envelope_principal(data: bytes) -> None:
    parse_or_typed_error(lambda: deserialize_principal(data), ProtocolError, len(data))


@FUZZ
@given(st.one_of(st.none(), st.binary(max_size=100), st.just(RESPONSES[1][2]).flatmap(damaged)),
       st.sampled_from([0, 41, 58]))
def test_envelope_embedded_response(data: bytes | None, error: int) -> None:
    envelope = {"errorCode": error, "responseData": data}
    parse_or_typed_error(lambda: unwrap_response(57, 2, envelope), NetworkError, len(data or b""))


SERVER_PROPERTIES = (
    b"process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n"
    b"listeners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n"
    b"log.dirs=/tmp/kraft-combined-logs\n"
)


@FUZZ
@given(st.one_of(st.binary(max_size=200), st.just(SERVER_PROPERTIES).flatmap(damaged)))
def test_server_properties(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "server.properties"
        path.write_bytes(data)

        def load() -> None:
            ServerConfig.load(path).validate()

        parse_or_typed_error(load, (RuntimeLayerError, ConfigError), len(data))


@FUZZ
@given(st.text(max_size=60))
def test_bootstrap_servers(text: str) -> None:
    parse_or_typed_error(lambda: parse_bootstrap(text), AdminClientError, len(text))
