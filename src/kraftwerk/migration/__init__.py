"""KIP-866, ZooKeeper side: read the ZooKeeper tree Kafka 3.x writes, check a cluster's readiness to
migrate, and translate the tree into KRaft metadata records.

Layer: beside ``image`` and ``controller``. Everything here is pure except :mod:`.reader`, the one
thin module that talks to ZooKeeper (through kazoo); the rest works on a :class:`.tree.ZkTree`, which
a live read and a ``migration dump`` file give alike.
"""
