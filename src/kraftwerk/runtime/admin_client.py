"""A small blocking admin client speaking Kafka's protocol: what ``kraftwerk features`` needs.

It does what Kafka's ``KafkaAdminClient`` does for the feature commands, with plain sockets:

* connects to the first reachable address of the bootstrap list (``--bootstrap-server`` brokers or
  ``--bootstrap-controller`` controllers), negotiating versions with ApiVersions per connection
  (a server that does not know our ApiVersions version answers v0 UNSUPPORTED_VERSION with its
  range, and we retry at its highest);
* :meth:`AdminClient.describe_features` reads SupportedFeatures / FinalizedFeatures / epoch from
  ApiVersions, optionally of one node found through DescribeCluster;
* :meth:`AdminClient.update_features` sends UpdateFeatures at the highest common version (v0-v2).
  Against brokers it goes to a broker, which forwards it to the active controller; against
  controllers it goes to the active controller named by DescribeCluster. NOT_CONTROLLER is retried
  after re-discovering the controller. v2 responses carry only a top-level error, which applies to
  every feature, as in Kafka's admin client;
* :meth:`AdminClient.add_raft_voter` / :meth:`AdminClient.remove_raft_voter` send AddRaftVoter /
  RemoveRaftVoter (KIP-853) to the active controller (``--bootstrap-controller`` only).

Frames are 4-byte big-endian sizes followed by a request/response header
(``kraftwerk.protocol.header``) and a body encoded by ``kraftwerk.protocol.codec``.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import socket
import ssl
import struct
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol import codec, header, registry
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.sasl_mechanisms import SaslAuthenticationError
from kraftwerk.protocol.schema import Kind, MessageSpec
from kraftwerk.runtime.client_security import PLAINTEXT, ClientSecurity

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_MAX_RESPONSE_BYTES = 100 * 1024 * 1024


class AdminClientError(KraftwerkError):
    """A request that could not be completed (no reachable node, timeout, protocol failure)."""


class UnsupportedOptionError(AdminClientError):
    """A kraftwerk-only option the node's API version cannot carry. Not retriable."""


class MismatchedEndpointTypeError(AdminClientError):
    """Kafka's ``MismatchedEndpointTypeException`` (KIP-919): ``--bootstrap-controller`` named a
    broker. Not retriable: the admin client fails at once instead of waiting for its timeout."""


class UpgradeType(enum.IntEnum):
    """UpdateFeatures v1+ ``UpgradeType`` (Kafka's ``FeatureUpdate.UpgradeType``)."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """One requested change: the target level and how it may move."""

    max_version_level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE


@dataclass(frozen=True, slots=True)
class UpdateResult:
    """The outcome for one feature: ``error`` is ``Errors.NONE`` on success."""

    error: Errors
    message: str | None = None
    config_audit: Mapping[str, Any] | None = None
    """kraftwerk (KIP-1294): the controller's pre-flight config audit of a metadata.version change."""

    @property
    def ok(self) -> bool:
        return self.error is Errors.NONE

    def describe(self) -> str:
        """What Kafka's exception ``getMessage()`` says: the server's text or the code's default."""
        if self.message is not None:
            return self.message
        return self.error.message or self.error.name


@dataclass(frozen=True, slots=True)
class FeatureMetadata:
    """Kafka's ``FeatureMetadata``: supported ranges, finalized levels and their epoch."""

    supported: Mapping[str, tuple[int, int]]
    finalized: Mapping[str, tuple[int, int]]
    """name → (min, max) version level; Kafka sets min = max = the finalized level."""
    epoch: int | None
    """The finalized features epoch, or None when the node reports none (-1)."""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str
    controller_id: int
    nodes: tuple[NodeInfo, ...]


def parse_bootstrap(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port,host:port`` (IPv6 hosts in brackets), like Kafka's ``ClientUtils``."""
    out: list[tuple[str, int]] = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        host, colon, port_text = item.rpartition(":")
        if not colon or not host:
            raise AdminClientError(f"Invalid url in bootstrap.servers: {item}")
        try:
            port = int(port_text)
        except ValueError:
            raise AdminClientError(f"Invalid url in bootstrap.servers: {item}") from None
        out.append((host.strip("[]"), port))
    if not out:
        raise AdminClientError("No resolvable bootstrap urls given in bootstrap.servers")
    return tuple(out)


class Connection:
    """One blocking connection with its negotiated API versions."""

    def __init__(self, host: str, port: int, *, client_id: str | None, timeout_s: float,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._correlation = 0
        try:
            raw = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise AdminClientError(f"Connection to {host}:{port} failed: {exc.strerror or exc}") from exc
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock: socket.socket = raw
        if security.context is not None:
            try:
                self._sock = security.context.wrap_socket(raw, server_hostname=host)
            except (OSError, ssl.SSLError) as exc:
                raw.close()
                raise AdminClientError(f"SSL handshake with {host}:{port} failed: {exc}") from None
        self.api_versions_response: codec.Value = {}
        self.versions: dict[int, tuple[int, int]] = {}
        self._negotiate()
        if security.sasl:
            try:
                security.authenticate(lambda key, version, body: self.request(key, body, version)[1])
            except SaslAuthenticationError as exc:
                self.close()
                raise AdminClientError(str(exc)) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    # --- frames ------------------------------------------------------------------------------

    def _send_frame(self, payload: bytes) -> None:
        try:
            self._sock.sendall(_SIZE.pack(len(payload)) + payload)
        except OSError as exc:
            raise AdminClientError(
                f"Failed to send to {self.host}:{self.port}: {exc.strerror or exc}") from exc

    def _recv_exact(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            try:
                chunk = self._sock.recv(n - len(chunks))
            except TimeoutError:
                raise AdminClientError(
                    f"Timed out waiting for a response from {self.host}:{self.port}") from None
            except OSError as exc:
                raise AdminClientError(f"Connection to {self.host}:{self.port} failed: {exc.strerror or exc}"
                                       ) from exc
            if not chunk:
                raise AdminClientError(f"Connection to {self.host}:{self.port} was closed by the server")
            chunks += chunk
        return bytes(chunks)

    def _roundtrip(self, spec: MessageSpec, version: int, body: codec.Value) -> bytes:
        """Send one request; return the response bytes after the response header."""
        self._correlation += 1
        correlation = self._correlation
        head = header.encode_request_header(
            {"requestApiKey": spec.api_key, "requestApiVersion": version, "correlationId": correlation,
             "clientId": self.client_id}, header.request_header_version(spec, version))
        self._send_frame(head + codec.encode(spec, version, body))
        size = _SIZE.unpack(self._recv_exact(4))[0]
        if size < 0 or size > _MAX_RESPONSE_BYTES:
            raise AdminClientError(f"Invalid response size {size} from {self.host}:{self.port}")
        frame = self._recv_exact(size)
        response_spec = registry.by_api_key(Kind.RESPONSE, spec.api_key)
        try:
            head_value, pos = header.decode_response_header(
                frame, header.response_header_version(response_spec, version))
        except ProtocolError as exc:
            raise AdminClientError(f"Corrupt response header from {self.host}:{self.port}: {exc}") from exc
        if head_value["correlationId"] != correlation:
            raise AdminClientError(f"Correlation id mismatch from {self.host}:{self.port}: expected "
                                   f"{correlation}, got {head_value['correlationId']}")
        return frame[pos:]

    def _negotiate(self) -> None:
        request = registry.by_api_key(Kind.REQUEST, ApiKey.API_VERSIONS)
        response = registry.by_api_key(Kind.RESPONSE, ApiKey.API_VERSIONS)
        version = request.valid_versions.highest
        assert version is not None
        for _ in range(2):
            body = {"clientSoftwareName": "kraftwerk", "clientSoftwareVersion": "0"}
            data = self._roundtrip(request, version, body)
            error_code = int.from_bytes(data[:2], "big", signed=True) if len(data) >= 2 else -1
            if error_code == Errors.UNSUPPORTED_VERSION.code:
                value = codec.decode(response, 0, data)
                theirs = {k["apiKey"]: k["maxVersion"] for k in value["apiKeys"]}
                if ApiKey.API_VERSIONS not in theirs:
                    break
                version = min(version, theirs[ApiKey.API_VERSIONS])
                continue
            try:
                value = codec.decode(response, version, data)
            except ProtocolError as exc:
                raise AdminClientError(f"Corrupt ApiVersions response from {self.host}:{self.port}: {exc}"
                                       ) from exc
            if value["errorCode"] != 0:
                raise AdminClientError(f"ApiVersions failed at {self.host}:{self.port}: "
                                       f"{Errors.for_code(value['errorCode']).name}")
            self.api_versions_response = value
            self.versions = {k["apiKey"]: (k["minVersion"], k["maxVersion"]) for k in value["apiKeys"]}
            return
        raise AdminClientError(f"{self.host}:{self.port} does not support any ApiVersions version we know")

    def usable_version(self, api_key: int) -> int:
        """The highest version both sides support (Kafka's ``NodeApiVersions.latestUsableVersion``)."""
        spec = registry.by_api_key(Kind.REQUEST, api_key)
        ours_low, ours_high = spec.valid_versions.lowest, spec.valid_versions.highest
        assert ours_high is not None
        theirs = self.versions.get(api_key)
        if theirs is None:
            raise AdminClientError(f"The node {self.host}:{self.port} does not support {spec.api_name}")
        low, high = max(ours_low, theirs[0]), min(ours_high, theirs[1])
        if low > high:
            raise AdminClientError(f"The node {self.host}:{self.port} supports {spec.api_name} versions "
                                   f"{theirs[0]}-{theirs[1]}, we support {ours_low}-{ours_high}")
        return high

    def request(self, api_key: int, body: codec.Value, version: int | None = None) -> tuple[int, codec.Value]:
        """Send a request at ``version`` (default: the highest usable); return (version, response)."""
        if version is None:
            version = self.usable_version(api_key)
        spec = registry.by_api_key(Kind.REQUEST, api_key)
        data = self._roundtrip(spec, version, body)
        try:
            return version, codec.decode(registry.by_api_key(Kind.RESPONSE, api_key), version, data)
        except ProtocolError as exc:
            raise AdminClientError(f"Corrupt {spec.api_name} response from {self.host}:{self.port}: {exc}"
                                   ) from exc


def _feature_metadata(value: codec.Value) -> FeatureMetadata:
    supported = {f["name"]: (f["minVersion"], f["maxVersion"]) for f in value.get("supportedFeatures", ())}
    finalized = {f["name"]: (f["minVersionLevel"], f["maxVersionLevel"])
                 for f in value.get("finalizedFeatures", ())}
    epoch = value.get("finalizedFeaturesEpoch", -1)
    return FeatureMetadata(supported, finalized, None if epoch < 0 else epoch)


class AdminClient:
    """Blocking admin calls against brokers (``controllers=False``) or controllers (``True``).

    ``bootstrap`` is ``host:port,...``; the first address that answers ApiVersions is used and
    the others are tried in turn on failure. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, bootstrap: str | Sequence[tuple[str, int]], *, controllers: bool = False,
                 client_id: str | None = "kraftwerk-admin", request_timeout_s: float = 30.0,
                 api_timeout_s: float = 60.0, retry_backoff_s: float = 0.1,
                 security: ClientSecurity = PLAINTEXT,
                 sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.bootstrap = parse_bootstrap(bootstrap) if isinstance(bootstrap, str) else tuple(bootstrap)
        self.controllers = controllers
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.api_timeout_s = api_timeout_s
        self.retry_backoff_s = retry_backoff_s
        self.security = security
        self._sleep = sleep
        self._monotonic = monotonic
        self._connections: dict[tuple[str, int], Connection] = {}
        self._verified: set[tuple[str, int]] = set()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    # --- connections -------------------------------------------------------------------------

    def connection(self, host: str, port: int) -> Connection:
        key = (host, port)
        conn = self._connections.get(key)
        if conn is None:
            conn = Connection(host, port, client_id=self.client_id, timeout_s=self.request_timeout_s,
                              security=self.security)
            self._connections[key] = conn
        return conn

    def _drop(self, conn: Connection) -> None:
        conn.close()
        self._connections.pop((conn.host, conn.port), None)

    def any_node(self) -> Connection:
        """A connection to the first reachable bootstrap address (Kafka's least-loaded node).

        Against controllers, each bootstrap connection is first asked DescribeCluster with
        EndpointType CONTROLLER, as Kafka's admin client bootstraps; a broker answers
        MISMATCHED_ENDPOINT_TYPE, raised as :class:`MismatchedEndpointTypeError`.
        """
        errors: list[str] = []
        for host, port in self.bootstrap:
            try:
                conn = self.connection(host, port)
            except AdminClientError as exc:
                errors.append(str(exc))
                continue
            if self.controllers and (host, port) not in self._verified:
                self._describe_cluster(conn)
                self._verified.add((host, port))
            return conn
        raise AdminClientError("Timed out waiting for a node assignment. " + "; ".join(errors))

    def _call(self, conn: Connection, api_key: int, body: codec.Value,
              version: int | None = None) -> tuple[int, codec.Value]:
        try:
            return conn.request(api_key, body, version)
        except AdminClientError:
            self._drop(conn)
            raise

    # --- calls -------------------------------------------------------------------------------

    def describe_cluster(self) -> ClusterDescription:
        """DescribeCluster of brokers (or, against controllers, of controllers: EndpointType 2)."""
        return self._describe_cluster(self.any_node())

    def _describe_cluster(self, conn: Connection) -> ClusterDescription:
        version = conn.usable_version(ApiKey.DESCRIBE_CLUSTER)
        if self.controllers and version < 1:
            raise AdminClientError("The controller does not support DescribeCluster with EndpointType")
        body = {"includeClusterAuthorizedOperations": False, "endpointType": 2 if self.controllers else 1,
                "includeFencedBrokers": True}
        _, value = self._call(conn, ApiKey.DESCRIBE_CLUSTER, body, version)
        if value["errorCode"] != 0:
            error = Errors.for_code(value["errorCode"])
            text = value.get("errorMessage") or error.message or error.name
            if error is Errors.MISMATCHED_ENDPOINT_TYPE:
                raise MismatchedEndpointTypeError(text)
            raise AdminClientError(text)
        nodes = tuple(NodeInfo(b["brokerId"], b["host"], b["port"], b.get("rack"), b.get("isFenced", False))
                      for b in value["brokers"])
        return ClusterDescription(value["clusterId"], value["controllerId"], nodes)

    def _node(self, node_id: int) -> Connection:
        for node in self.describe_cluster().nodes:
            if node.node_id == node_id:
                return self.connection(node.host, node.port)
        raise AdminClientError(f"No node with id {node_id} found in the cluster metadata")

    def call(self, api_key: int, body: codec.Value, node_id: int | None = None) -> codec.Value:
        """One request to any node (or ``node_id``) at the highest usable version; the body is
        trimmed to that version's fields. A response whose every result is NOT_CONTROLLER (a
        forwarded write met a controller election) is retried until the API timeout."""
        deadline = self._monotonic() + self.api_timeout_s
        while True:
            conn = self.any_node() if node_id is None else self._node(node_id)
            version = conn.usable_version(api_key)
            spec = registry.by_api_key(Kind.REQUEST, api_key)
            trimmed = {f.json_name: body[f.json_name] for f in spec.fields
                       if f.json_name in body and version in f.versions}
            _, value = self._call(conn, api_key, trimmed, version)
            codes = {r.get("errorCode") for part in ("topics", "responses", "results")
                     for r in value.get(part) or () if isinstance(r, dict)}
            if codes != {Errors.NOT_CONTROLLER.code} or self._monotonic() + self.retry_backoff_s >= deadline:
                return value
            self._sleep(self.retry_backoff_s)

    def api_versions(self, node_id: int | None = None) -> codec.Value:
        """The ApiVersions response of a node (any bootstrap node, or ``node_id``)."""
        conn = self.any_node() if node_id is None else self._node(node_id)
        return conn.api_versions_response

    def describe_features(self, node_id: int | None = None) -> FeatureMetadata:
        """Kafka's ``describeFeatures``: the features a node supports and has finalized."""
        return _feature_metadata(self.api_versions(node_id))

    def _controller(self) -> Connection:
        """Where UpdateFeatures goes: a broker (which forwards), or the active controller."""
        if not self.controllers:
            return self.any_node()
        cluster = self.describe_cluster()
        for node in cluster.nodes:
            if node.node_id == cluster.controller_id:
                return self.connection(node.host, node.port)
        raise AdminClientError("Timed out waiting for a node assignment. Call: updateFeatures "
                               "(no active controller is known yet)")

    def update_features(self, updates: Mapping[str, FeatureUpdate], *, validate_only: bool = False,
                        timeout_ms: int | None = None, skip_config_audit: bool = False
                        ) -> dict[str, UpdateResult]:
        """Send UpdateFeatures; return a result per requested feature (Kafka's per-feature futures).

        Raises :class:`AdminClientError` only when no request could be completed at all.
        """
        if not updates:
            raise AdminClientError("Feature updates can not be null or empty.")
        for name, update in updates.items():
            if not name.strip():
                raise AdminClientError("Provided feature can not be empty.")
            if update.max_version_level < 0:
                raise AdminClientError("Cannot specify a negative version level.")
            if update.max_version_level < 1 and update.upgrade_type is UpgradeType.UPGRADE:
                raise AdminClientError(
                    "The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the "
                    f"provided maxVersionLevel:{update.max_version_level} is < 1.")
        timeout = int(self.request_timeout_s * 1000) if timeout_ms is None else timeout_ms
        deadline = self._monotonic() + self.api_timeout_s
        last_error = "Timed out waiting for a node assignment. Call: updateFeatures"
        while True:
            try:
                conn = self._controller()
                version = conn.usable_version(ApiKey.UPDATE_FEATURES)
                body = update_features_body(updates, version, validate_only=validate_only,
                                            timeout_ms=timeout)
                if skip_config_audit:
                    if version < 3:
                        raise UnsupportedOptionError("--skip-config-audit needs a kraftwerk controller "
                                                     "(UpdateFeatures v3)")
                    body["skipConfigAudit"] = True
                _, value = self._call(conn, ApiKey.UPDATE_FEATURES, body, version)
            except (MismatchedEndpointTypeError, UnsupportedOptionError):
                raise
            except AdminClientError as exc:
                last_error = str(exc)
            else:
                if value["errorCode"] != Errors.NOT_CONTROLLER.code:
                    return update_features_results(updates, value)
                last_error = value.get("errorMessage") or Errors.NOT_CONTROLLER.message or "NOT_CONTROLLER"
            if self._monotonic() + self.retry_backoff_s >= deadline:
                raise AdminClientError(last_error)
            self._sleep(self.retry_backoff_s)


    def describe_user_scram_credentials(self, users: Sequence[str] = ()) -> codec.Value:
        """DescribeUserScramCredentials (every user when ``users`` is empty)."""
        body = {"users": [{"name": u} for u in users] or None}
        return self._call(self.any_node(), ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body)[1]

    def alter_user_scram_credentials(self, deletions: Sequence[codec.Value],
                                     upsertions: Sequence[codec.Value]) -> codec.Value:
        """AlterUserScramCredentials (a broker forwards it; a controller must be the active one)."""
        body = {"deletions": list(deletions), "upsertions": list(upsertions)}
        return self._call(self._controller(), ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body)[1]

    def describe_acls(self, acl_filter: codec.Value) -> codec.Value:
        """DescribeAcls (answered from any node's image)."""
        return self._call(self.any_node(), ApiKey.DESCRIBE_ACLS, dict(acl_filter))[1]

    def create_acls(self, creations: Sequence[codec.Value]) -> codec.Value:
        """CreateAcls (a broker forwards it; a controller must be the active one)."""
        return self._call(self._controller(), ApiKey.CREATE_ACLS, {"creations": list(creations)})[1]

    def delete_acls(self, filters: Sequence[codec.Value]) -> codec.Value:
        """DeleteAcls (a broker forwards it; a controller must be the active one)."""
        return self._call(self._controller(), ApiKey.DELETE_ACLS, {"filters": list(filters)})[1]

    def add_raft_voter(self, voter_id: int, directory_id: uuid.UUID,
                       endpoints: Sequence[tuple[str, str, int]], timeout_ms: int = 30_000) -> UpdateResult:
        """Kafka's ``Admin.addRaftVoter``: ``endpoints`` are the new voter's (listener, host, port)."""
        body = {"clusterId": None, "timeoutMs": timeout_ms, "voterId": voter_id,
                "voterDirectoryId": directory_id, "ackWhenCommitted": True,
                "listeners": [{"name": n, "host": h, "port": p} for n, h, p in endpoints]}
        return self._voter_change(ApiKey.ADD_RAFT_VOTER, body)

    def remove_raft_voter(self, voter_id: int, directory_id: uuid.UUID) -> UpdateResult:
        """Kafka's ``Admin.removeRaftVoter``."""
        body = {"clusterId": None, "voterId": voter_id, "voterDirectoryId": directory_id}
        return self._voter_change(ApiKey.REMOVE_RAFT_VOTER, body)

    def _voter_change(self, api_key: int, body: codec.Value) -> UpdateResult:
        """Send a voter change to the active controller; NOT_LEADER_OR_FOLLOWER (a leader change on
        the way) is retried until ``api_timeout_s``, as Kafka's admin client does."""
        if not self.controllers:
            raise AdminClientError("Adding or removing a KRaft controller needs --bootstrap-controller")
        deadline = self._monotonic() + self.api_timeout_s
        last_error = "Timed out waiting for a node assignment."
        while True:
            try:
                conn = self._controller()
                _, value = self._call(conn, api_key, body, conn.usable_version(api_key))
            except AdminClientError as exc:
                last_error = str(exc)
            else:
                error = Errors.for_code(value["errorCode"])
                if error is not Errors.NOT_LEADER_OR_FOLLOWER:
                    return UpdateResult(error, value.get("errorMessage"))
                last_error = error.describe()
            if self._monotonic() + self.retry_backoff_s >= deadline:
                raise AdminClientError(last_error)
            self._sleep(self.retry_backoff_s)


def update_features_body(updates: Mapping[str, FeatureUpdate], version: int, *, validate_only: bool,
                         timeout_ms: int) -> dict[str, Any]:
    """The UpdateFeatures request Kafka's admin client builds (v0: AllowDowngrade instead of the type)."""
    if version == 0 and validate_only:
        raise AdminClientError("validateOnly is only supported by UpdateFeatures v1 or later")
    items = []
    for name, update in updates.items():
        item: dict[str, Any] = {"feature": name, "maxVersionLevel": update.max_version_level}
        if version == 0:
            if update.upgrade_type is UpgradeType.UNSAFE_DOWNGRADE:
                raise AdminClientError("UpdateFeatures v0 cannot express an unsafe downgrade")
            item["allowDowngrade"] = update.upgrade_type is not UpgradeType.UPGRADE
        else:
            item["upgradeType"] = int(update.upgrade_type)
        items.append(item)
    body: dict[str, Any] = {"timeoutMs": timeout_ms, "featureUpdates": items}
    if version >= 1:
        body["validateOnly"] = validate_only
    return body


def update_features_results(updates: Mapping[str, FeatureUpdate],
                            value: codec.Value) -> dict[str, UpdateResult]:
    """Map a response onto the requested features as Kafka's admin client does.

    A top-level error fails every feature with that error; otherwise the per-feature results (v0-v1)
    decide, and a feature without a result succeeds only when the response has no results at all
    (v2, which dropped them).
    """
    top = Errors.for_code(value["errorCode"])
    audit = json.loads(value["configAudit"]) if value.get("configAudit") else None
    if top is not Errors.NONE:
        failure = UpdateResult(top, value.get("errorMessage"), audit)
        return {name: failure for name in updates}
    results = value.get("results") or []
    if not results:
        # A success may still carry a message: kraftwerk's accepted unsafe downgrade reports
        # what was lost there (Kafka never sends one on success).
        return {name: UpdateResult(Errors.NONE, value.get("errorMessage"),
                                   audit if name == "metadata.version" else None) for name in updates}
    by_name = {r["feature"]: UpdateResult(Errors.for_code(r["errorCode"]), r.get("errorMessage"))
               for r in results}
    missing = UpdateResult(Errors.UNKNOWN_SERVER_ERROR, None)
    out: dict[str, UpdateResult] = {}
    for name in updates:
        found = by_name.get(name)
        if found is None:
            found = UpdateResult(missing.error,
                                 f"The controller response did not contain a result for feature {name}")
        out[name] = found
    return out
