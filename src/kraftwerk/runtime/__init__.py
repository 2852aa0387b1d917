"""The only I/O glue: asyncio network server/client with Kafka framing, node processes, config.

The cores (``raft``, ``controller``, ``broker``) are sans-I/O state machines; this package runs them
over real sockets, files and the event loop's clock.
"""
