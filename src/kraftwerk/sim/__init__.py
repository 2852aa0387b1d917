"""Deterministic simulation of raft nodes: virtual clock, lossy network, fsync disks, faults.

- :class:`~kraftwerk.sim.cluster.Cluster` hosts nodes (a RaftNode + an optional state machine
  built by a factory, so later layers can run their own state machine in the same world).
- :func:`~kraftwerk.sim.runner.run_seed` plays one seed of a :class:`SimConfig` (fault phase,
  healing, liveness phase) and checks every invariant of :mod:`kraftwerk.sim.checker`.
"""

from kraftwerk.sim.checker import Ack, Checker, InvariantViolation
from kraftwerk.sim.cluster import Cluster, KVStateMachine, SimNode, StateMachine, StateMachineFactory
from kraftwerk.sim.runner import FAULT_KINDS, Scenario, SeedResult, SimConfig, run_seed
from kraftwerk.sim.world import Disk, EventQueue, LinkFaults, Network

__all__ = [
    "FAULT_KINDS",
    "Ack",
    "Checker",
    "Cluster",
    "Disk",
    "EventQueue",
    "InvariantViolation",
    "KVStateMachine",
    "LinkFaults",
    "Network",
    "Scenario",
    "SeedResult",
    "SimConfig",
    "SimNode",
    "StateMachine",
    "StateMachineFactory",
    "run_seed",
]
