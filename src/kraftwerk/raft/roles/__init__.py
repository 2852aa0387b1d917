"""The roles of a KRaft replica (Kafka's EpochStates), one small class each.

Each role keeps the state that lives and dies with it (a leader's replica progress, a candidate's
grants, a follower's snapshot download) and reads and writes the rest through the one
:class:`~kraftwerk.raft.state.QuorumState`. A role never builds another: it asks the node
(:class:`Transitions`) to move, and returns at once, since it is then no longer the node's role.
Requests a role sent die with it: the node forgets what is in flight on every change, so a
response always reaches the role that asked.
"""

from kraftwerk.raft.roles.base import RoleState, Transitions
from kraftwerk.raft.roles.candidate import Candidate
from kraftwerk.raft.roles.follower import Follower
from kraftwerk.raft.roles.leader import Leader
from kraftwerk.raft.roles.resigned import Resigned
from kraftwerk.raft.roles.unattached import Unattached

__all__ = ["Candidate", "Follower", "Leader", "Resigned", "RoleState", "Transitions", "Unattached"]
