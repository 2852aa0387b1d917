"""The node host: one node's cores (raft, controller, broker) wired together once, effects out.

:class:`NodeHost` holds every decision a node makes between its cores; a driver supplies only the
I/O through :class:`HostIO` (``runtime/node.py``: sockets, files, the wall clock;
``sim/lifecycle.py``: the simulated network, disk and clock).
"""

from kraftwerk.node.host import HostIO, NodeHost

__all__ = ["HostIO", "NodeHost"]
