"""Config changes on the active controller (Kafka's ``ConfigurationControlManager``, sans-I/O).

AlterConfigs (legacy: replaces a resource's configs) and IncrementalAlterConfigs (SET, DELETE,
APPEND, SUBTRACT) for TOPIC and BROKER resources (a node id, or ``""`` for the cluster default),
validated with :mod:`kraftwerk.config.validate` at the finalized metadata.version's level and
answered with the ConfigRecords to append. Errors are per resource, as Kafka's; nothing of a
refused resource is written. Secret values are never logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kraftwerk.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfigLayers,
    ConfigEntry,
    ConfigError,
    ConfigResourceType,
    ConfigSource,
    ConfigType,
    ConstraintViolationError,
    broker_key,
    broker_rule_violations,
    describe_broker,
    describe_topic,
    redacted,
    validate_broker_update,
    validate_topic_configs,
)
from kraftwerk.controller.effects import AppendThenRespond, Body, Respond
from kraftwerk.controller.errors import ApiError
from kraftwerk.controller.responses import alter_error_body
from kraftwerk.controller.topics import topic_name_error
from kraftwerk.image.audit import reports_static_configs
from kraftwerk.image.model import ConfigResource, MetadataImage
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.configs import (
    AlterConfigsRequest,
    AlterConfigsRequestAlterConfigsResource,
    AlterConfigsResponse,
    AlterConfigsResponseAlterConfigsResourceResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResponseDescribeConfigsResourceResult,
    DescribeConfigsResponseDescribeConfigsResult,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
)
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.protocol.routing import Request
from kraftwerk.versions.metadata_version import FEATURE_NAME

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

log = logging.getLogger(__name__)

#: A resource of AlterConfigs or of IncrementalAlterConfigs: both go through one path.
AlterResource = TypeVar(
    "AlterResource",
    AlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
MAX_VALUE_LENGTH = 32767


def _config_record(rtype: int, rname: str, name: str, value: str | None) -> MetadataRecord:
    return MetadataRecord(
        lookup_record("ConfigRecord"),
        0,
        {"resourceType": rtype, "resourceName": rname, "name": name, "value": value},
    )


def _config_key(record: MetadataRecord) -> tuple[int, str, str, str | None]:
    v = record.value
    return v["resourceType"], v["resourceName"], v["name"], v["value"]


def _is_list(rtype: int, name: str) -> bool:
    key = TOPIC_CONFIGS.get(name) if rtype == ConfigResourceType.TOPIC else broker_key(name)
    return key is not None and key.type is ConfigType.LIST


def _default_text(rtype: int, name: str) -> str | None:
    key = TOPIC_CONFIGS.get(name) if rtype == ConfigResourceType.TOPIC else BROKER_CONFIGS.get(name)
    if key is None or key.default is None or key.required:
        return None
    default = key.default
    return ",".join(default) if isinstance(default, tuple) else str(default)


class ConfigControl:
    """Config changes judged against one image.

    ``layers`` are the controller's config layers, its ``server.properties`` and the image's cluster
    default (topic configs are validated over the log defaults they make); ``controllers`` are
    the controller ids (a BROKER resource may name one of them); ``static_of`` the static configs
    each broker reported (KIP-1294), under which a broker's changed configs take effect.
    """

    def __init__(
        self, image: MetadataImage, layers: BrokerConfigLayers, controllers: tuple[int, ...],
        static_of: Mapping[int, Mapping[str, str]] | None = None, level: int | None = None,
    ) -> None:
        mv = image.metadata_version
        if mv is None:
            raise ApiError(Errors.NOT_CONTROLLER, "The controller has not finished activation")
        self.image = image
        self.level = mv.feature_level if level is None else level
        self.layers = layers
        self.controllers = controllers
        self.static_of = static_of or {}

    def incremental_alter_configs(self, request_body: Mapping[str, Any]) -> tuple[list[MetadataRecord], Body]:
        body = cast(IncrementalAlterConfigsRequest, request_body)

        def changes(resource: IncrementalAlterConfigsRequestAlterConfigsResource) -> dict[str, str | None]:
            seen: set[str] = set()
            ops: list[tuple[str, int, str | None]] = []
            for c in resource.get("configs") or ():
                if c["name"] in seen:
                    raise ApiError(Errors.INVALID_REQUEST, "Error due to duplicate config keys")
                seen.add(c["name"])
                ops.append((c["name"], c["configOperation"], c.get("value")))
            return self._apply_ops(resource["resourceType"], resource["resourceName"], ops)

        resources = list(body.get("resources") or ())
        records, responses = self._alter(resources, body.get("validateOnly", False), changes)
        response: IncrementalAlterConfigsResponse = {"throttleTimeMs": 0, "responses": responses}
        return records, as_body(response)

    def alter_configs(self, request_body: Mapping[str, Any]) -> tuple[list[MetadataRecord], Body]:
        body = cast(AlterConfigsRequest, request_body)

        def changes(resource: AlterConfigsRequestAlterConfigsResource) -> dict[str, str | None]:
            new = {c["name"]: c.get("value") for c in resource.get("configs") or ()}
            rtype, rname = resource["resourceType"], resource["resourceName"]
            current = self._current(rtype, rname)
            out: dict[str, str | None] = {k: None for k in current if k not in new}
            out.update(new)
            return out

        resources = list(body.get("resources") or ())
        records, responses = self._alter(resources, body.get("validateOnly", False), changes)
        response: AlterConfigsResponse = {"throttleTimeMs": 0, "responses": responses}
        return records, as_body(response)

    # ------------------------------------------------------------------ shared path

    def _alter(
        self,
        resources: list[AlterResource],
        validate_only: bool,
        changes: Callable[[AlterResource], dict[str, str | None]],
    ) -> tuple[list[MetadataRecord], list[AlterConfigsResponseAlterConfigsResourceResponse]]:
        keys = [(r["resourceType"], r["resourceName"]) for r in resources]
        records: list[MetadataRecord] = []
        responses: list[AlterConfigsResponseAlterConfigsResourceResponse] = []
        for resource in resources:
            rtype, rname = resource["resourceType"], resource["resourceName"]
            try:
                if keys.count((rtype, rname)) > 1:
                    raise ApiError(Errors.INVALID_REQUEST, "Duplicate resource.")
                self._check_resource(rtype, rname)
                wanted = changes(resource)
                records += self._records(rtype, rname, wanted)
                error, message = Errors.NONE, None
            except ApiError as err:
                error, message = err.error, err.text
            responses.append(
                {
                    "errorCode": error.code,
                    "errorMessage": message,
                    "resourceType": rtype,
                    "resourceName": rname,
                }
            )
            self._log(rtype, rname, resource, error, message, validate_only)
        return ([] if validate_only else records), responses

    def _log(
        self,
        rtype: int,
        rname: str,
        resource: AlterResource,
        error: Errors,
        message: str | None,
        validate_only: bool,
    ) -> None:
        shown = redacted({c["name"]: c.get("value") for c in resource.get("configs") or ()}, rtype)
        log.info(
            "%sAlterConfigs %s %r %s: %s",
            "Validate-only " if validate_only else "",
            ConfigResourceType(rtype).name if rtype in ConfigResourceType._value2member_map_ else rtype,
            rname,
            shown,
            "SUCCESS" if error is Errors.NONE else f"{error.name} ({message})",
        )

    def _check_resource(self, rtype: int, rname: str) -> None:
        if rtype == ConfigResourceType.TOPIC:
            if not rname:
                raise ApiError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
            invalid = topic_name_error(rname)
            if invalid is not None:
                raise ApiError(Errors.INVALID_TOPIC_EXCEPTION, invalid)
        elif rtype == ConfigResourceType.BROKER:
            if rname and not (rname.isascii() and rname.isdigit()):
                raise ApiError(Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {rname}")
        elif rtype == ConfigResourceType.BROKER_LOGGER:
            raise ApiError(
                Errors.INVALID_REQUEST,
                "Broker logger configs are changed on the broker itself, "
                "in a request that carries no other resource type.",
            )
        else:
            raise ApiError(Errors.UNSUPPORTED_VERSION, f"Unknown resource type {rtype}")

    def _current(self, rtype: int, rname: str) -> Mapping[str, str]:
        return self.image.configs.get(ConfigResource(rtype, rname), {})

    def _apply_ops(
        self, rtype: int, rname: str, ops: list[tuple[str, int, str | None]]
    ) -> dict[str, str | None]:
        current = self._current(rtype, rname)
        out: dict[str, str | None] = {}
        for name, op, value in ops:
            if value is None and op != DELETE:
                raise ApiError(Errors.INVALID_REQUEST, f"Null value not supported for : {name}")
            if op == SET:
                out[name] = value
            elif op == DELETE:
                out[name] = None
            elif op in (APPEND, SUBTRACT):
                if not _is_list(rtype, name):
                    raise ApiError(
                        Errors.INVALID_CONFIG,
                        f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.",
                    )
                old = current.get(name)
                if old is None:
                    old = _default_text(rtype, name)
                parts = [p for p in (old or "").split(",") if p]
                assert value is not None
                for item in value.split(","):
                    if op == APPEND and item not in parts:
                        parts.append(item)
                    elif op == SUBTRACT and item in parts:
                        parts.remove(item)
                out[name] = ",".join(parts)
            else:
                raise ApiError(Errors.INVALID_REQUEST, f"Unknown alter configs operation {op} for {name}")
        return out

    def _records(self, rtype: int, rname: str, wanted: Mapping[str, str | None]) -> list[MetadataRecord]:
        """Validate the resource's configs after the change, then the records that make it: one
        per changed key (every key of a BROKER resource, so brokers reload: KAFKA-14136)."""
        current = self._current(rtype, rname)
        for name, value in wanted.items():
            if value is not None and len(value) > MAX_VALUE_LENGTH:
                raise ApiError(
                    Errors.INVALID_CONFIG,
                    f"The configuration value for {name} is too long: "
                    f"{len(value)} characters; the limit is {MAX_VALUE_LENGTH}.",
                )
        after = dict(current)
        for name, value in wanted.items():
            if value is None:
                after.pop(name, None)
            else:
                after[name] = value
        if rtype == ConfigResourceType.TOPIC:
            try:
                validate_topic_configs(after, level=self.level, layers=self.layers)
            except ConfigError as exc:
                raise ApiError(Errors.INVALID_CONFIG, str(exc)) from None
            if rname not in self.image.topics.by_name:
                raise ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{rname}' does not exist.")
        else:
            set_now = {n: v for n, v in wanted.items() if v is not None}
            try:
                validate_broker_update(set_now, cluster_default=rname == "", level=self.level)
            except ConstraintViolationError as exc:
                raise ApiError(Errors.INVALID_CONFIG, str(exc)) from None
            except ConfigError as exc:
                raise ApiError(Errors.INVALID_REQUEST, str(exc)) from None
            if rname and int(rname) not in self.image.cluster.brokers and int(rname) not in self.controllers:
                raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"No broker with id {rname} found.")
            self._check_effective(rname, after, wanted)
        return [
            _config_record(rtype, rname, n, v)
            for n, v in wanted.items()
            if rtype == ConfigResourceType.BROKER or current.get(n) != v
        ]

    def _check_effective(
        self, rname: str, after: Mapping[str, str], changed: Mapping[str, str | None]
    ) -> None:
        """KIP-1294: the value each affected broker ends up with must pass the current level's rules
        too -- deleting a dynamic override falls back on the cluster default or on the broker's
        reported ``server.properties``, which a rule of this level may not allow."""
        default = self._current(ConfigResourceType.BROKER, "") if rname else after
        for bid in sorted(self.image.cluster.brokers):
            if rname and rname != str(bid):
                continue
            own = after if rname else self._current(ConfigResourceType.BROKER, str(bid))
            if bid not in self.static_of and reports_static_configs(self.image, bid):
                uncovered = [n for n in sorted(changed) if n not in own and n not in default
                             and (key := broker_key(n)) is not None and key.rule_at(self.level) is not None]
                if uncovered:
                    raise ApiError(Errors.INVALID_CONFIG, (
                        f"Broker {bid} would fall back on its server.properties value of {uncovered[0]}, "
                        "which it has not reported to this controller yet (it re-sends it after a "
                        "controller failover); retry"))
            found = broker_rule_violations(self.level, self.static_of.get(bid, {}), default, own, changed)
            if found:
                raise ApiError(
                    Errors.INVALID_CONFIG, f"Broker {bid} would be left with {found[0].sourced_message()}")


# ---------------------------------------------------------------------- DescribeConfigs


def describe_configs(
    image: MetadataImage,
    node_id: int,
    static: Mapping[str, str],
    version: int,
    request_body: Mapping[str, Any],
    loggers: Mapping[str, str] | None = None,
) -> Body:
    """DescribeConfigs as a node answers it from its image and ``server.properties`` (Kafka's
    ``ConfigHelper``): BROKER ``""`` (the dynamic cluster defaults) or this node's id, TOPIC, and
    -- on a broker, which passes its ``loggers`` -- BROKER_LOGGER. Sensitive values are None."""
    body = cast(DescribeConfigsRequest, request_body)
    cluster_default = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
    include_synonyms = bool(body.get("includeSynonyms", False)) and version >= 1
    include_docs = bool(body.get("includeDocumentation", False)) and version >= 3
    results: list[DescribeConfigsResponseDescribeConfigsResult] = []
    for res in body.get("resources") or ():
        rtype, rname = res["resourceType"], res["resourceName"]
        keys = res.get("configurationKeys")
        try:
            entries = _describe_resource(image, node_id, static, cluster_default, rtype, rname, loggers)
        except ApiError as err:
            results.append(
                {
                    "errorCode": err.error.code,
                    "errorMessage": err.text,
                    "resourceType": rtype,
                    "resourceName": rname,
                    "configs": [],
                }
            )
            continue
        configs: list[DescribeConfigsResponseDescribeConfigsResourceResult] = [
            {
                "name": e.name,
                "value": e.value,
                "readOnly": e.read_only,
                "isDefault": e.source is ConfigSource.DEFAULT_CONFIG,
                "configSource": int(e.source),
                "isSensitive": e.sensitive,
                "synonyms": [{"name": s.name, "value": s.value, "source": int(s.source)} for s in e.synonyms]
                if include_synonyms
                else [],
                "configType": e.config_type.value,
                "documentation": e.documentation if include_docs else None,
            }
            for e in entries
            if keys is None or e.name in keys
        ]
        results.append(
            {
                "errorCode": 0,
                "errorMessage": None,
                "resourceType": rtype,
                "resourceName": rname,
                "configs": configs,
            }
        )
    response: DescribeConfigsResponse = {"throttleTimeMs": 0, "results": results}
    return as_body(response)


def _describe_resource(
    image: MetadataImage,
    node_id: int,
    static: Mapping[str, str],
    cluster_default: Mapping[str, str],
    rtype: int,
    rname: str,
    loggers: Mapping[str, str] | None,
) -> tuple[ConfigEntry, ...]:
    if rtype == ConfigResourceType.TOPIC:
        invalid = topic_name_error(rname)
        if invalid is not None:
            raise ApiError(Errors.INVALID_TOPIC_EXCEPTION, invalid)
        if rname not in image.topics.by_name:
            raise ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
        layers = BrokerConfigLayers(
            static=static,
            cluster_default=cluster_default,
            broker=image.configs.get(ConfigResource(ConfigResourceType.BROKER, str(node_id)), {}),
        )
        return describe_topic(image.configs.get(ConfigResource(ConfigResourceType.TOPIC, rname), {}), layers)
    if rtype in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
        if rname and not (rname.isascii() and rname.isdigit()):
            raise ApiError(Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {rname}")
        if rtype == ConfigResourceType.BROKER_LOGGER:
            if loggers is None or rname != str(node_id):
                raise ApiError(
                    Errors.INVALID_REQUEST, f"Unexpected broker id, expected {node_id}, but received {rname}"
                )
            return tuple(
                ConfigEntry(
                    n,
                    lv,
                    ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                    False,
                    False,
                    (),
                    ConfigType.STRING,
                    None,
                )
                for n, lv in sorted(loggers.items())
            )
        if rname not in ("", str(node_id)):
            raise ApiError(
                Errors.INVALID_REQUEST,
                f"Unexpected broker id, expected {node_id} or empty string, but received {rname}",
            )
        layers = BrokerConfigLayers(
            static=static,
            cluster_default=cluster_default,
            broker=image.configs.get(ConfigResource(ConfigResourceType.BROKER, str(node_id)), {}),
        )
        return describe_broker(layers, cluster_default=rname == "")
    raise ApiError(Errors.INVALID_REQUEST, f"Unsupported resource type {rtype}")


class ConfigurationControlManager:
    """The controller's config RPCs (Kafka's ``ConfigurationControlManager`` and, for
    DescribeConfigs, ``ConfigHelper``), each judged by a :class:`ConfigControl` over the
    committed image with the config changes this active controller appended on top (Kafka's
    controller judges its uncommitted state too), at the stricter of the committed
    metadata.version and one in flight (the catalogue's rules only tighten as levels rise)."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller
        self.inflight: list[tuple[int, str, str, str | None]] = []
        """ConfigRecords this active controller appended and has not replayed yet."""

    def on_committed(self, record: MetadataRecord) -> None:
        if record.spec.name == "ConfigRecord":
            key = _config_key(record)
            if key in self.inflight:
                self.inflight.remove(key)

    def on_leader_change(self) -> None:
        self.inflight.clear()

    def pending_image(self) -> MetadataImage:
        """The committed image with the in-flight config changes applied (what the next change and
        KIP-1294's audit of a metadata.version change are judged against)."""
        image = self._c.topics.live_image()  # a topic being deleted takes no more config changes
        if not self.inflight:
            return image
        configs = image.configs
        for rtype, rname, name, value in self.inflight:
            resource = ConfigResource(rtype, rname)
            current = dict(configs.get(resource, {}))
            if value is None:
                current.pop(name, None)
            else:
                current[name] = value
            configs = configs.set(resource, current)
        return replace(image, configs=configs)

    def pending_level(self) -> int:
        """The stricter of the committed metadata.version level and one in flight."""
        c = self._c
        mv = c.image.metadata_version
        return max(0 if mv is None else mv.feature_level, c.features.inflight_levels.get(FEATURE_NAME, 0))

    def registration_error(self, broker_id: int, static: Mapping[str, str]) -> ApiError | None:
        """KIP-1294: a new broker incarnation whose ``server.properties`` (under the dynamic
        overrides that apply to it) breaks a rule of the current level is refused (INVALID_CONFIG,
        retried by the broker): an override set with AlterConfigs lets it in, no file edit needed."""
        image = self.pending_image()
        default = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
        own = image.configs.get(ConfigResource(ConfigResourceType.BROKER, str(broker_id)), {})
        found = broker_rule_violations(self.pending_level(), static, default, own, static)
        if not found:
            return None
        return ApiError(Errors.INVALID_CONFIG,
                        f"Broker {broker_id} cannot register: {found[0].sourced_message()}; "
                        "a dynamic override (kraftwerk configs / kafka-configs --alter) lets it in")

    def _control(self) -> ConfigControl:
        c = self._c
        reported = c.cluster.reported_static_configs
        static_of = {
            b.id: {n: v for n, v in pairs if v is not None}
            for b in c.image.cluster.brokers.values()
            if (pairs := b.static_configs or reported.get(b.id, ()))
        }
        level = self.pending_level()
        return ConfigControl(self.pending_image(), c.config_layers(), c.voters, static_of, level)

    def _reply(self, request: Request, records: list[MetadataRecord], response: Body
               ) -> Respond | AppendThenRespond:
        if not records:
            return Respond(response)
        self.inflight += [_config_key(r) for r in records]
        refusal = alter_error_body(Errors.NOT_CONTROLLER, None, request.body)
        return AppendThenRespond(tuple(records), response, atomic=True, not_controller_body=refusal)

    def alter_configs(self, request: Request) -> Respond | AppendThenRespond:
        return self._reply(request, *self._control().alter_configs(request.body))

    def incremental_alter_configs(self, request: Request) -> Respond | AppendThenRespond:
        return self._reply(request, *self._control().incremental_alter_configs(request.body))

    def describe_configs(self, request: Request) -> Respond:
        c = self._c
        return Respond(describe_configs(c.image, c.node_id, c.static_configs, request.version, request.body))
