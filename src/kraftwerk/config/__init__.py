"""The config layer: Kafka's ``ConfigDef`` in Python, with KIP-1294's metadata.version rules (pure).

Import from here. Modules: ``types`` (the nine types, parsing, Java printing), ``validators``,
``definition`` (a config's declaration, a catalogue), ``catalogue`` (every broker, controller and
topic config), ``mv_rules`` (constraints that arrive with a metadata.version), ``mv``
(validating at a level), ``validate`` (checks of a config change), ``resolve`` (effective values
and DescribeConfigs entries), ``secrets`` (what is never shown), ``properties`` (Java properties
text), ``errors``.
"""

from kraftwerk.config.catalogue import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    broker_config_type,
    broker_key,
    broker_synonyms,
    is_known_broker_config,
    log_dirs,
    parse_broker_config,
    topic_config_for,
    topic_config_type,
)
from kraftwerk.config.definition import (
    REQUIRED,
    ConfigDef,
    ConfigKey,
    Importance,
    MvRule,
    ParsedConfig,
    Scope,
    Synonym,
)
from kraftwerk.config.errors import (
    ConfigError,
    ConfigValueError,
    MissingConfigError,
    PropertiesSyntaxError,
)
from kraftwerk.config.mv import (
    ConstraintViolationError,
    Violation,
    broker_rule_violations,
    static_configs_to_report,
    validate_at,
    violations_at,
)
from kraftwerk.config.mv_rules import CONSTRAINT_CHANGES, ConstraintChange
from kraftwerk.config.properties import (
    PropertyEntry,
    dump_properties,
    escape_property,
    parse_properties,
    properties_dict,
    properties_values,
)
from kraftwerk.config.resolve import (
    BrokerConfigLayers,
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
    describe_broker,
    describe_broker_config,
    describe_topic,
    describe_topic_config,
    effective_broker_props,
    topic_default,
)
from kraftwerk.config.secrets import ConfigMap, is_sensitive, redact, redacted
from kraftwerk.config.types import HIDDEN, ConfigResourceType, ConfigType, Password, parse_value
from kraftwerk.config.validate import validate_broker_update, validate_topic_configs

__all__ = [
    "BROKER_CONFIGS",
    "CONSTRAINT_CHANGES",
    "HIDDEN",
    "REQUIRED",
    "TOPIC_CONFIGS",
    "BrokerConfigLayers",
    "ConfigDef",
    "ConfigEntry",
    "ConfigError",
    "ConfigKey",
    "ConfigMap",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "ConfigValueError",
    "ConstraintChange",
    "ConstraintViolationError",
    "Importance",
    "MissingConfigError",
    "MvRule",
    "ParsedConfig",
    "Password",
    "PropertiesSyntaxError",
    "PropertyEntry",
    "Scope",
    "Synonym",
    "Violation",
    "broker_config_type",
    "broker_key",
    "broker_rule_violations",
    "broker_synonyms",
    "describe_broker",
    "describe_broker_config",
    "describe_topic",
    "describe_topic_config",
    "dump_properties",
    "effective_broker_props",
    "escape_property",
    "is_known_broker_config",
    "is_sensitive",
    "log_dirs",
    "parse_broker_config",
    "parse_properties",
    "parse_value",
    "properties_dict",
    "properties_values",
    "redact",
    "redacted",
    "static_configs_to_report",
    "topic_config_for",
    "topic_config_type",
    "topic_default",
    "validate_at",
    "validate_broker_update",
    "validate_topic_configs",
    "violations_at",
]
