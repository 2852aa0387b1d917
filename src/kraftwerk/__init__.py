"""kraftwerk: Apache Kafka's KRaft metadata.version lifecycle in Python."""

__version__ = "0.1.0"
