"""Declarations of Kafka's RPC request and response bodies, one module per family."""
