# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of the protocol codec's decoders: one interpreter of the decode plans that
``codec._Gen.plan`` derives from the message declarations.

The generated Python decoders stay the reference. This one builds the same dicts (same keys, same
order, fresh defaults) and fails the same way: ``DecodeError`` with the same text where the
generated code raises one, and the same ``IndexError``, ``struct.error`` or ``UnicodeDecodeError``
where the generated code lets one escape (``codec.decode_from`` turns those into ``DecodeError``).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

import struct

from kraftwerk.protocol.errors import DecodeError

cdef object _StructError = struct.error

# item kinds
cdef enum:
    K_FIXED = 0
    K_BOOL = 1
    K_UUID = 2
    K_STRING = 3
    K_BYTES = 4
    K_STRUCT = 5
    K_ARRAY = 6

cdef dict _KINDS = {"bool": K_BOOL, "uuid": K_UUID, "string": K_STRING, "bytes": K_BYTES,
                    "records": K_BYTES, "struct": K_STRUCT, "array": K_ARRAY}
# struct codes of fixed-width fields, and their sizes
cdef dict _FIXED_SIZES = {"b": 1, "h": 2, "i": 4, "q": 8, "H": 2, "I": 4, "d": 8}


cdef inline object _index_error():
    return IndexError("index out of range")


cdef inline object _struct_error(Py_ssize_t size, Py_ssize_t pos, Py_ssize_t n):
    return _StructError(f"unpack_from requires a buffer of at least {pos + size} bytes for unpacking "
                        f"{size} bytes at offset {pos} (actual buffer size is {n})")


cdef inline object _too_long(str what, object n, Py_ssize_t left):
    return DecodeError(f"{what} length {n} exceeds the {left} bytes left")


cdef inline uint64_t _be(const uint8_t *p, int size) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(size):
        v = (v << 8) | p[i]
    return v


cdef inline Py_ssize_t _fixed_size(char code) noexcept nogil:
    if code == b"b":
        return 1
    if code == b"h" or code == b"H":
        return 2
    if code == b"i" or code == b"I":
        return 4
    return 8


cdef object _fixed(const uint8_t *p, char code):
    """The value of one big-endian fixed-width field (a struct code of ``codec._FIXED``)."""
    cdef uint64_t u
    cdef double d
    if code == b"i":
        return <int32_t>_be(p, 4)
    if code == b"h":
        return <int16_t>_be(p, 2)
    if code == b"q":
        return <int64_t>_be(p, 8)
    if code == b"b":
        return <int8_t>p[0]
    if code == b"H":
        return <uint16_t>_be(p, 2)
    if code == b"I":
        return <uint32_t>_be(p, 4)
    u = _be(p, 8)
    memcpy(&d, &u, 8)
    return d


cdef object _fresh(object value):
    """A default as the generated code writes it: lists and dicts are new objects each time."""
    if type(value) is list:
        return [_fresh(v) for v in <list>value]
    if type(value) is dict:
        return {k: _fresh(v) for k, v in (<dict>value).items()}
    return value


cdef class Decoder


cdef enum:
    UUID_SLOTS = 256  # a power of two: the slot is the top bits of a hash


cdef class _Uuids:
    """The UUIDs one decoder made lately, by their 16 bytes (a direct-mapped cache).

    A metadata log repeats a few ids millions of times (a topic's in each of its partitions, a
    broker's directories in every replica); finding one here costs a fraction of making the bytes
    object that ``uuid_of`` (itself a cache) takes. A miss asks ``uuid_of`` and keeps its answer.
    """
    cdef uint8_t keys[UUID_SLOTS][16]
    cdef PyObject *values[UUID_SLOTS]  # owned references; NULL for an empty slot
    cdef object uuid_of

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(UUID_SLOTS):
            Py_XDECREF(self.values[i])

    cdef object get(self, const uint8_t *p):
        cdef uint64_t lo, hi
        memcpy(&lo, p, 8)
        memcpy(&hi, p + 8, 8)
        cdef Py_ssize_t slot = <Py_ssize_t>(((lo ^ (hi * 31)) * <uint64_t>0x9E3779B97F4A7C15) >> 56)
        cdef PyObject *old = self.values[slot]
        if old != NULL and memcmp(self.keys[slot], p, 16) == 0:
            return <object>old
        v = self.uuid_of(PyBytes_FromStringAndSize(<const char *>p, 16))
        # read the slot again: another thread may have filled it while ``uuid_of`` ran
        old = self.values[slot]
        Py_INCREF(v)
        self.values[slot] = <PyObject *>v
        memcpy(self.keys[slot], p, 16)
        Py_XDECREF(old)  # last: the slot is consistent before anything a release runs
        return v


cdef class _Reader:
    """The buffer being decoded: its bytes and length (bounds of every read), and the codec's
    shared helpers (handed in, so that this module never imports the codec it serves)."""
    cdef const uint8_t *b
    cdef Py_ssize_t n
    cdef bytes buf
    cdef Decoder owner  # whose UUID cache the reads use
    cdef str unknown


cdef Py_ssize_t _uvarint(_Reader r, Py_ssize_t *pos) except? -1:
    """``codec.read_uvarint`` (at most 5 bytes, no 32-bit check) as a C integer."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef uint8_t c
    cdef Py_ssize_t p = pos[0]
    while True:
        if p >= r.n:
            raise _index_error()
        c = r.b[p]
        p += 1
        result |= (<uint64_t>(c & 0x7F)) << shift
        if c < 0x80:
            pos[0] = p
            return <Py_ssize_t>result
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint is longer than 5 bytes")


cdef class _Item:
    """One field of a plan (see ``codec._Gen.plan``)."""
    cdef int kind
    cdef str key
    cdef str name
    cdef bint nullable
    cdef str what  # the type name the generated code puts in length errors
    # fixed runs
    cdef tuple keys
    cdef bytes codes
    cdef Py_ssize_t size
    # arrays
    cdef int elem_kind
    cdef char elem_code
    cdef Py_ssize_t elem_size
    cdef str elem_what
    # structs and arrays of structs
    cdef _Struct sub

    cdef object read(self, _Reader r, Py_ssize_t *pos, Py_ssize_t limit, bint flexible, dict out):
        """Read this field into ``out`` (a fixed run: all of its fields)."""
        cdef Py_ssize_t p, i
        cdef const char *codes
        if self.kind == K_FIXED:
            p = pos[0]
            if p + self.size > r.n:
                raise _struct_error(self.size, p, r.n)
            codes = self.codes
            for i in range(len(self.keys)):
                PyDict_SetItem(out, self.keys[i], _fixed(r.b + p, codes[i]))
                p += _fixed_size(codes[i])
            pos[0] = p
            return None
        if self.kind == K_STRUCT:
            if self.nullable:
                if pos[0] >= r.n:
                    raise _index_error()
                if r.b[pos[0]] >= 128:
                    pos[0] += 1
                    PyDict_SetItem(out, self.key, None)
                    return None
                pos[0] += 1
            PyDict_SetItem(out, self.key, self.sub.decode(r, pos, limit))
            return None
        if self.kind == K_ARRAY:
            PyDict_SetItem(out, self.key, self.read_array(r, pos, limit, flexible))
            return None
        PyDict_SetItem(out, self.key, _primitive(r, pos, limit, flexible, self.kind, self.nullable,
                                                 self.name, self.what))
        return None

    cdef object read_array(self, _Reader r, Py_ssize_t *pos, Py_ssize_t limit, bint flexible):
        cdef Py_ssize_t n, i, p
        cdef list a
        if flexible:
            n = _uvarint(r, pos) - 1
        else:
            p = pos[0]
            if p + 4 > r.n:
                raise _struct_error(4, p, r.n)
            n = <int32_t>_be(r.b + p, 4)
            pos[0] = p + 4
        if n < 0:
            if self.nullable:
                return None
            raise DecodeError(f"non-nullable field {self.name} was serialized as null")
        if n > limit - pos[0]:
            raise _too_long("array", n, limit - pos[0])
        a = []
        for i in range(n):
            if self.elem_kind == K_STRUCT:
                a.append(self.sub.decode(r, pos, limit))
            elif self.elem_kind == K_FIXED:
                p = pos[0]
                if p + self.elem_size > r.n:
                    raise _struct_error(self.elem_size, p, r.n)
                a.append(_fixed(r.b + p, self.elem_code))
                pos[0] = p + self.elem_size
            else:
                a.append(_primitive(r, pos, limit, flexible, self.elem_kind, False, self.name, self.elem_what))
        return a


cdef object _primitive(_Reader r, Py_ssize_t *pos, Py_ssize_t limit, bint flexible, int kind, bint nullable,
                       str name, str what):
    """A bool, uuid, string or bytes field (``_Gen._decode_primitive``)."""
    cdef Py_ssize_t p = pos[0]
    cdef Py_ssize_t n, avail
    cdef object v
    if kind == K_BOOL:
        if p >= r.n:
            raise _index_error()
        pos[0] = p + 1
        return r.b[p] != 0
    if kind == K_UUID:
        if p + 16 > limit:
            raise _too_long("uuid", 16, limit - p)
        if p + 16 > r.n:  # only when ``limit`` lies past the buffer: the slice comes out short
            v = r.owner.uuid_of(r.buf[p:p + 16])
        else:
            v = r.owner.uuids().get(r.b + p)
        pos[0] = p + 16
        return v
    if flexible:
        n = _uvarint(r, pos) - 1
        p = pos[0]
    elif kind == K_STRING:
        if p + 2 > r.n:
            raise _struct_error(2, p, r.n)
        n = <int16_t>_be(r.b + p, 2)
        p += 2
        pos[0] = p
    else:
        if p + 4 > r.n:
            raise _struct_error(4, p, r.n)
        n = <int32_t>_be(r.b + p, 4)
        p += 4
        pos[0] = p
    if n < 0:
        if nullable:
            return None
        raise DecodeError(f"non-nullable field {name} was serialized as null")
    if n > limit - p:
        raise _too_long(what, n, limit - p)
    avail = n
    if p + n > r.n:  # ``limit`` lies past the buffer: a Python slice stops at its end
        avail = r.n - p if r.n > p else 0
    if kind == K_STRING:
        v = PyUnicode_DecodeUTF8(<const char *>r.b + p, avail, NULL)
    else:
        v = PyBytes_FromStringAndSize(<const char *>r.b + p, avail)
    pos[0] = p + n
    return v


cdef class _Struct:
    """The decoder of one struct: its plan, compiled once into items."""
    cdef list regular
    cdef list defaults  # (key, default) pairs
    cdef dict tagged  # tag -> _Item
    cdef bint flexible

    cdef dict decode(self, _Reader r, Py_ssize_t *pos, Py_ssize_t end):
        cdef dict out = {}
        cdef _Item item
        cdef Py_ssize_t count, i, tag, size, tag_end
        cdef object key
        for item in self.regular:
            item.read(r, pos, end, self.flexible, out)
        for key, default in self.defaults:
            PyDict_SetItem(out, key, _fresh(default))
        if self.flexible:
            count = _uvarint(r, pos)
            if count > end - pos[0]:
                raise _too_long("tagged field count", count, end - pos[0])
            for i in range(count):
                tag = _uvarint(r, pos)
                size = _uvarint(r, pos)
                if size > end - pos[0]:
                    raise _too_long("tagged field", size, end - pos[0])
                tag_end = pos[0] + size
                item = self.tagged.get(tag)
                if item is not None:
                    item.read(r, pos, tag_end, True, out)
                    if pos[0] != tag_end:
                        raise DecodeError(
                            f"tagged field {tag} declared {tag_end} bytes but its value did not fit them")
                else:
                    out.setdefault(r.unknown, []).append((tag, r.buf[pos[0]:tag_end]))
                    pos[0] = tag_end
        return out


cdef _Item _item(tuple spec):
    cdef _Item item = _Item.__new__(_Item)
    cdef str kind = spec[0]
    if kind == "fixed":
        item.kind = K_FIXED
        item.keys = tuple(key for key, _ in spec[1])
        item.codes = "".join(code for _, code in spec[1]).encode("ascii")
        item.size = sum(_FIXED_SIZES[code] for _, code in spec[1])
        return item
    item.kind = _KINDS[kind]
    item.key = spec[1]
    item.name = spec[2]
    item.nullable = spec[3]
    item.what = kind
    if item.kind == K_STRUCT:
        item.sub = _struct(spec[4])
    elif item.kind == K_ARRAY:
        elem, sub = spec[4]
        if elem in _FIXED_SIZES:
            item.elem_kind = K_FIXED
            item.elem_code = ord(elem)
            item.elem_size = _FIXED_SIZES[elem]
        else:
            item.elem_kind = K_STRUCT if sub is not None else _KINDS[elem]
            item.elem_what = elem
            if sub is not None:
                item.sub = _struct(sub)
    return item


cdef _Struct _struct(tuple plan):
    cdef _Struct s = _Struct.__new__(_Struct)
    regular, defaults, tagged, flexible = plan
    s.regular = [_item(spec) for spec in regular]
    s.defaults = list(defaults)
    s.tagged = {tag: _item(spec) for tag, spec in tagged}
    s.flexible = flexible
    return s


cdef class Decoder:
    """A decoder ``(buf, pos, end) -> (value, pos)`` of one (message, version), like the generated
    ones; ``buf`` is ``bytes`` (``codec.decode_from`` converts other buffers first)."""
    cdef _Struct root
    cdef object uuid_of
    cdef _Uuids _uuids  # made on the first UUID read: most messages have none
    cdef str unknown

    cdef _Uuids uuids(self):
        if self._uuids is None:
            self._uuids = _Uuids.__new__(_Uuids)
            self._uuids.uuid_of = self.uuid_of
        return self._uuids

    cdef dict decode(self, bytes buf, Py_ssize_t *pos, Py_ssize_t end):
        cdef _Reader r = _Reader.__new__(_Reader)
        r.owner = self
        r.unknown = self.unknown
        r.buf = buf
        r.b = <const uint8_t *>PyBytes_AS_STRING(buf)
        r.n = PyBytes_GET_SIZE(buf)
        return self.root.decode(r, pos, end)

    def __call__(self, bytes buf, Py_ssize_t pos, Py_ssize_t end):
        value = self.decode(buf, &pos, end)
        return value, pos


def decoder(tuple plan, uuid_of, str unknown):
    """The compiled decoder of a plan from ``codec._Gen.plan``; ``uuid_of`` makes a UUID of 16
    bytes, ``unknown`` is the key unknown tagged fields are kept under."""
    cdef Decoder d = Decoder.__new__(Decoder)
    d.root = _struct(plan)
    d.uuid_of = uuid_of
    d.unknown = unknown
    return d


cdef enum:
    FRAME_VERSION = 1
    ONE_BYTE = 0x80  # api keys and versions below this take one varint byte each


cdef extern from *:
    """
    /* an instance of a slots class with every slot empty, as object.__new__ makes */
    static PyObject *kw_alloc(PyTypeObject *t) { return t->tp_alloc(t, 0); }
    /* a slot's member descriptor sets it directly, as object.__setattr__ would after finding it */
    static int kw_set_slot(PyObject *descr, PyObject *obj, PyObject *value) {
        return Py_TYPE(descr)->tp_descr_set(descr, obj, value);
    }
    """
    object kw_alloc(PyTypeObject *t)
    int kw_set_slot(object descr, object obj, object value) except -1


cdef class FrameDecoder:
    """``frame.decode_metadata_record`` for the frames a log is made of: bytes whose frame version,
    api key and record version take one byte each, of a known record at a supported version, that
    decode without error to the last byte. Every other input (and every failure) goes to the pure
    function, so errors and their texts are its own; a cold load decodes a million records here
    without a Python frame for each."""
    cdef object pure
    cdef object known  # (api_key, version) -> (spec, decoder), or None when the pure path must say why
    cdef list found  # api_key * ONE_BYTE + version -> (spec, Decoder), None, or False (not asked yet)
    cdef object record_type
    cdef object spec_slot, version_slot, value_slot

    def __call__(self, data):
        cdef const uint8_t *b
        cdef Py_ssize_t n, pos = 3
        cdef object entry
        if type(data) is not bytes:
            return self.pure(data)
        b = <const uint8_t *>PyBytes_AS_STRING(data)
        n = PyBytes_GET_SIZE(data)
        if n < 3 or b[0] != FRAME_VERSION or b[1] >= ONE_BYTE or b[2] >= ONE_BYTE:
            return self.pure(data)
        entry = <object>PyList_GET_ITEM(self.found, b[1] * ONE_BYTE + b[2])
        if entry is False:
            entry = self.known(b[1], b[2])
            if entry is not None and type(entry[1]) is not Decoder:
                entry = None
            self.found[b[1] * ONE_BYTE + b[2]] = entry
        if entry is None:
            return self.pure(data)
        spec, dec = <tuple>entry
        try:
            value = (<Decoder>dec).decode(<bytes>data, &pos, n)
        except Exception:
            return self.pure(data)
        if pos != n:
            return self.pure(data)
        record = kw_alloc(<PyTypeObject *>self.record_type)
        kw_set_slot(self.spec_slot, record, spec)
        kw_set_slot(self.version_slot, record, b[2])
        kw_set_slot(self.value_slot, record, value)
        return record


def frame_decoder(record_type, known, pure):
    """The compiled ``decode_metadata_record``: ``record_type`` is the frozen slots dataclass it
    makes (spec, version, value), ``known(api_key, version)`` the (spec, decoder) of a record the
    pure path would decode or None, ``pure`` the pure function itself."""
    cdef FrameDecoder d = FrameDecoder.__new__(FrameDecoder)
    d.pure = pure
    d.known = known
    d.found = [False] * (ONE_BYTE * ONE_BYTE)
    d.record_type = record_type
    d.spec_slot = record_type.__dict__["spec"]
    d.version_slot = record_type.__dict__["version"]
    d.value_slot = record_type.__dict__["value"]
    return d
