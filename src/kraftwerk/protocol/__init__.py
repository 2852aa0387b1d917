"""Kafka's wire protocol: primitives, message declarations, derived codecs, error codes."""
