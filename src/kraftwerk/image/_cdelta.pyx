# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of the metadata image's partition replay (``delta._partition_from_record_py``):
a cold load replays one PartitionRecord per partition, millions for a large cluster.

Same result (a ``PartitionRegistration`` whose tuples are shared through ``shared``) and the same
errors with the same texts as the pure function. One difference the result's value does not show:
the partition is not tracked by the cyclic garbage collector (see ``partition_from_record``).
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetDefault
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM

from kraftwerk.image.errors import MetadataReplayError
from kraftwerk.image.model import DIR_MIGRATING, LeaderRecoveryState, PartitionRegistration

cdef extern from *:
    """
    /* an instance of a tuple subclass (the PartitionRegistration NamedTuple) with n empty slots */
    static PyObject *kw_alloc_tuple(PyTypeObject *t, Py_ssize_t n) { return t->tp_alloc(t, n); }
    """
    object kw_alloc_tuple(PyTypeObject *t, Py_ssize_t n)
    void PyObject_GC_UnTrack(object o)

cdef PyTypeObject *_PARTITION = <PyTypeObject *>PartitionRegistration
cdef object _MIGRATING = DIR_MIGRATING
cdef dict _RECOVERY_STATES = {state.value: state for state in LeaderRecoveryState}
cdef tuple _EMPTY = ()


cdef inline object _get(object value, str key, object default):
    """``value.get(key, default)``, without a method call for the dicts the decoders build."""
    cdef PyObject *found
    if type(value) is dict:
        found = PyDict_GetItem(value, key)
        return default if found is NULL else <object>found
    return value.get(key, default)


cdef inline object _share(dict shared, object value):
    if shared is None:
        return value
    return <object>PyDict_SetDefault(shared, value, value)


cdef inline object _ints(object values):
    """``delta._ints``: a tuple of the values, the empty tuple for none."""
    if not values:
        return _EMPTY
    if type(values) is tuple:
        return values
    return tuple(values)


cdef inline void _put(object t, Py_ssize_t i, object item):
    Py_INCREF(item)
    PyTuple_SET_ITEM(t, i, item)


def partition_from_record(value, dict shared=None):
    """Kafka's PartitionRegistration(PartitionRecord): ``delta._partition_from_record_py``."""
    cdef object replicas = _share(shared, _ints(_get(value, "replicas", None)))
    cdef object dirs_raw = _get(value, "directories", None)
    cdef object dirs, state, raw_state, part
    if dirs_raw:
        if len(dirs_raw) != len(replicas):
            raise MetadataReplayError(
                f"The lengths for replicas and directories do not match in partition "
                f"{_get(value, 'topicId', None)}:{_get(value, 'partitionId', None)}"
            )
        dirs = _share(shared, tuple(dirs_raw))
    else:
        dirs = _share(shared, (_MIGRATING,) * len(replicas))
    isr = _share(shared, _ints(_get(value, "isr", None)))
    removing = _share(shared, _ints(_get(value, "removingReplicas", None)))
    adding = _share(shared, _ints(_get(value, "addingReplicas", None)))
    leader = _get(value, "leader", -1)
    raw_state = _get(value, "leaderRecoveryState", 0)
    state = _RECOVERY_STATES.get(raw_state)
    if state is None:
        raise MetadataReplayError(f"Value {raw_state} is not a valid leader recovery state")
    elr = _share(shared, _ints(_get(value, "eligibleLeaderReplicas", None)))
    last_known_elr = _share(shared, _ints(_get(value, "lastKnownElr", None)))
    part = kw_alloc_tuple(_PARTITION, 11)
    _put(part, 0, replicas)
    _put(part, 1, isr)
    _put(part, 2, dirs)
    _put(part, 3, removing)
    _put(part, 4, adding)
    _put(part, 5, leader)
    _put(part, 6, state)
    _put(part, 7, _get(value, "leaderEpoch", -1))
    _put(part, 8, _get(value, "partitionEpoch", -1))
    _put(part, 9, elr)
    _put(part, 10, last_known_elr)
    # A partition holds ints, an enum member and tuples of ints or UUIDs: nothing that can refer back
    # to it, so it can be in no reference cycle. Untracked, the collector never walks the millions
    # of them a large image holds (CPython untracks plain tuples of atoms the same way; a tuple
    # subclass it never does). Reference counting still frees them.
    PyObject_GC_UnTrack(part)
    return part
