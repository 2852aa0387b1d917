# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of the records layer's hot loops: v2 record decode and v0/v1 -> v2 up-conversion.

Same inputs, results and errors (types and texts) as the pure functions it replaces
(``batch._decode_v2_py``, ``convert._upconvert_message_py``); ``kraftwerk.native`` picks one at
import. Every read is checked against the buffer's length, as the pure code's IndexError is.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from kraftwerk.records.errors import CorruptRecordError
from kraftwerk.records.types import Record

cdef extern from "zlib.h":
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int length) nogil

cdef extern from *:
    """
    /* CRC-32C (Castagnoli): SSE4.2's crc32 instruction when the CPU has it, else a byte table. */
    #include <stdint.h>
    #include <stddef.h>
    #include <string.h>
    static uint32_t kw_crc32c_table[256];
    static int kw_crc32c_hw = 0;

    static void kw_crc32c_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            kw_crc32c_table[i] = c;
        }
    #if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        kw_crc32c_hw = __builtin_cpu_supports("sse4.2");
    #endif
    }

    #if defined(__x86_64__) && defined(__GNUC__)
    __attribute__((target("sse4.2")))
    static uint32_t kw_crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n) {
        uint64_t c = crc;
        while (n >= 8) { uint64_t w; memcpy(&w, p, 8); c = __builtin_ia32_crc32di(c, w); p += 8; n -= 8; }
        uint32_t c32 = (uint32_t)c;
        while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
        return c32;
    }
    #endif

    static uint32_t kw_crc32c(const uint8_t *p, size_t n) {
        uint32_t c = 0xFFFFFFFFu;
    #if defined(__x86_64__) && defined(__GNUC__)
        if (kw_crc32c_hw) return kw_crc32c_sse42(c, p, n) ^ 0xFFFFFFFFu;
    #endif
        while (n--) c = kw_crc32c_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
        return c ^ 0xFFFFFFFFu;
    }
    """
    void kw_crc32c_init()
    uint32_t kw_crc32c(const uint8_t *p, size_t n) nogil

kw_crc32c_init()

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(PyObject *op)
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int _PyBytes_Resize(PyObject **b, Py_ssize_t size) except -1

cdef extern from *:
    """
    /* an instance of a tuple subclass (the Record NamedTuple) with n empty slots, as tuple.__new__ makes */
    static PyObject *kw_alloc_tuple(PyTypeObject *t, Py_ssize_t n) { return t->tp_alloc(t, n); }
    """
    bint __builtin_add_overflow(int64_t a, int64_t b, int64_t *r) nogil
    object kw_alloc_tuple(PyTypeObject *t, Py_ssize_t n)

cdef object _Record = Record
cdef PyTypeObject *_RECORD_TYPE = <PyTypeObject *>Record
cdef tuple _NO_HEADERS = ()

# varint read results: 0 is success, the others index the pure reader's exception texts
cdef enum:
    OK = 0
    E_INDEX = 1
    E_UVARINT_LONG = 2
    E_VARINT_32 = 3
    E_UVARLONG_LONG = 4
    E_VARLONG_64 = 5

cdef tuple _VARINT_ERRORS = (
    None,
    "index out of range",
    "unsigned varint is longer than 5 bytes",
    "varint does not fit in 32 bits",
    "unsigned varlong is longer than 10 bytes",
    "varlong does not fit in 64 bits",
)


cdef inline int _varint(const uint8_t *b, Py_ssize_t n, Py_ssize_t *pos, int64_t *out) noexcept nogil:
    """A zig-zag 32-bit varint at ``pos[0]`` (protocol.codec.read_varint's rules and errors)."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef uint8_t c
    cdef Py_ssize_t p = pos[0]
    while True:
        if p >= n:
            return E_INDEX
        c = b[p]
        p += 1
        result |= (<uint64_t>(c & 0x7F)) << shift
        if c < 0x80:
            break
        shift += 7
        if shift > 28:
            return E_UVARINT_LONG
    if result > 0xFFFFFFFFULL:
        return E_VARINT_32
    pos[0] = p
    out[0] = (<int64_t>(result >> 1)) ^ -(<int64_t>(result & 1))
    return OK


cdef inline int _varlong(const uint8_t *b, Py_ssize_t n, Py_ssize_t *pos, int64_t *out) noexcept nogil:
    """A zig-zag 64-bit varint at ``pos[0]`` (protocol.codec.read_varlong's rules and errors)."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef uint8_t c
    cdef Py_ssize_t p = pos[0]
    while True:
        if p >= n:
            return E_INDEX
        c = b[p]
        p += 1
        if shift == 63 and c < 0x80 and (c & 0x7F) > 1:
            return E_VARLONG_64
        result |= (<uint64_t>(c & 0x7F)) << shift
        if c < 0x80:
            break
        shift += 7
        if shift > 63:
            return E_UVARLONG_LONG
    pos[0] = p
    out[0] = (<int64_t>(result >> 1)) ^ -(<int64_t>(result & 1))
    return OK


cdef inline Py_ssize_t _floordiv2(Py_ssize_t x) noexcept nogil:
    """Python's ``x // 2`` (C division truncates negative numbers towards zero)."""
    return x >> 1


cdef inline object _add(int64_t a, int64_t b):
    """``a + b`` as a Python int, exact even past 64 bits (the pure code's ints never overflow)."""
    cdef int64_t r
    if __builtin_add_overflow(a, b, &r):
        return <object>a + <object>b
    return r


cdef class V2Records:
    """Iterator over the records of an uncompressed v2 records section (see ``decode_v2``)."""

    cdef Py_buffer _view
    cdef bint _held
    cdef const uint8_t *_b
    cdef Py_ssize_t _end
    cdef Py_ssize_t _pos
    cdef Py_ssize_t _left
    cdef int64_t _base_offset
    cdef int64_t _base_ts
    cdef object _lat
    cdef object _where
    cdef bint _done

    def __iter__(self):
        return self

    def __dealloc__(self):
        self._finish()

    cdef void _finish(self):
        """Done: the buffer is released at once (a memory map can close while the iterator lives)."""
        self._done = True
        if self._held:
            self._held = False
            PyBuffer_Release(&self._view)

    cdef _malformed(self, int code):
        self._finish()
        return CorruptRecordError(f"Malformed record: {_VARINT_ERRORS[code]}", self._where)

    cdef _corrupt(self, str message):
        self._finish()
        return CorruptRecordError(message, self._where)

    def __next__(self):
        cdef const uint8_t *b = self._b
        cdef Py_ssize_t n = self._end
        cdef Py_ssize_t pos = self._pos
        cdef Py_ssize_t rec_end
        cdef int64_t length, ts_delta, off_delta, size
        cdef int err
        cdef object key, value, headers, ts, rec
        if self._done:
            raise StopIteration
        if self._left == 0:
            self._finish()
            if pos != n:
                raise self._corrupt("Incorrect declared batch size, records still remaining in file")
            raise StopIteration
        err = _varint(b, n, &pos, &length)
        if err:
            raise self._malformed(err)
        rec_end = pos + length
        if length < 6 or rec_end > n:
            raise self._corrupt(f"Invalid record size {length}")
        pos += 1  # the attributes byte is unused
        err = _varlong(b, n, &pos, &ts_delta)
        if err:
            raise self._malformed(err)
        err = _varint(b, n, &pos, &off_delta)
        if err:
            raise self._malformed(err)
        err = _varint(b, n, &pos, &size)
        if err:
            raise self._malformed(err)
        if size < 0:
            key = None
        else:
            if pos + size > rec_end:
                raise self._corrupt(f"Invalid key size {size}")
            key = PyBytes_FromStringAndSize(<const char *>b + pos, size)
            pos += size
        err = _varint(b, n, &pos, &size)
        if err:
            raise self._malformed(err)
        if size < 0:
            value = None
        else:
            if pos + size > rec_end:
                raise self._corrupt(f"Invalid value size {size}")
            value = PyBytes_FromStringAndSize(<const char *>b + pos, size)
            pos += size
        if pos >= n:
            raise self._malformed(E_INDEX)
        if b[pos] == 0:
            headers = _NO_HEADERS
            pos += 1
        else:
            headers = self._headers(&pos, rec_end)
        if pos != rec_end:
            raise self._corrupt(f"Invalid record size: expected to read {length} bytes in record payload, "
                                f"but instead read {length + pos - rec_end}")
        self._pos = pos
        self._left -= 1
        ts = _add(self._base_ts, ts_delta) if self._lat is None else self._lat
        rec = kw_alloc_tuple(_RECORD_TYPE, 5)
        offset = _add(self._base_offset, off_delta)
        Py_INCREF(offset)
        PyTuple_SET_ITEM(rec, 0, offset)
        Py_INCREF(ts)
        PyTuple_SET_ITEM(rec, 1, ts)
        Py_INCREF(key)
        PyTuple_SET_ITEM(rec, 2, key)
        Py_INCREF(value)
        PyTuple_SET_ITEM(rec, 3, value)
        Py_INCREF(headers)
        PyTuple_SET_ITEM(rec, 4, headers)
        if headers is _NO_HEADERS:
            # ints, bytes or None and the empty tuple: no cycle can run through this record, so the
            # collector need not track it (CPython untracks such tuples on its next pass anyway)
            PyObject_GC_UnTrack(<PyObject *>rec)
        return rec

    cdef tuple _headers(self, Py_ssize_t *at, Py_ssize_t rec_end):
        """``batch._decode_headers``: the header count, then (UTF-8 key, value or None) pairs."""
        cdef const uint8_t *b = self._b
        cdef Py_ssize_t n = self._end
        cdef Py_ssize_t pos = at[0]
        cdef int64_t count, size, i
        cdef int err
        cdef list out = []
        cdef object hkey, hval
        err = _varint(b, n, &pos, &count)
        if err:
            raise self._malformed(err)
        if count < 0 or count > _floordiv2(rec_end - pos):
            raise self._corrupt(f"Found invalid number of record headers {count}")
        for i in range(count):
            err = _varint(b, n, &pos, &size)
            if err:
                raise self._malformed(err)
            if size < 0 or pos + size > rec_end:
                raise self._corrupt(f"Invalid header key size {size}")
            try:
                hkey = PyUnicode_DecodeUTF8(<const char *>b + pos, size, "strict")
            except UnicodeDecodeError:
                raise self._corrupt("Header key is not valid UTF-8") from None
            pos += size
            err = _varint(b, n, &pos, &size)
            if err:
                raise self._malformed(err)
            if size < 0:
                hval = None
            else:
                if pos + size > rec_end:
                    raise self._corrupt(f"Invalid header value size {size}")
                hval = PyBytes_FromStringAndSize(<const char *>b + pos, size)
                pos += size
            out.append((hkey, hval))
        at[0] = pos
        return tuple(out)


def decode_v2(buf, Py_ssize_t count, int64_t base_offset, int64_t base_ts, lat, where):
    """The records of the v2 records section ``buf`` (uncompressed; any bytes-like, read in place),
    lazily: ``batch._decode_v2_py``."""
    cdef V2Records it = V2Records.__new__(V2Records)
    PyObject_GetBuffer(buf, &it._view, PyBUF_SIMPLE)
    it._held = True
    it._b = <const uint8_t *>it._view.buf
    it._end = it._view.len
    it._pos = 0
    it._left = count
    it._base_offset = base_offset
    it._base_ts = base_ts
    it._lat = lat
    it._where = where
    it._done = False
    return it


# ------------------------------------------------------------------ up-conversion

cdef inline int64_t _be64(const uint8_t *p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | p[i]
    return <int64_t>v


cdef inline int32_t _be32(const uint8_t *p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline uint8_t *_put64(uint8_t *p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    cdef int i
    for i in range(8):
        p[i] = <uint8_t>(u >> (56 - 8 * i))
    return p + 8


cdef inline uint8_t *_put32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t>(v >> 24)
    p[1] = <uint8_t>(v >> 16)
    p[2] = <uint8_t>(v >> 8)
    p[3] = <uint8_t>v
    return p + 4


cdef inline int _varint_size(int64_t v) noexcept nogil:
    cdef uint64_t u = (<uint64_t>(v << 1)) ^ <uint64_t>(v >> 63)
    cdef int n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


cdef inline uint8_t *_put_varint(uint8_t *p, int64_t v) noexcept nogil:
    cdef uint64_t u = (<uint64_t>(v << 1)) ^ <uint64_t>(v >> 63)
    while u >= 0x80:
        p[0] = <uint8_t>((u & 0x7F) | 0x80)
        p += 1
        u >>= 7
    p[0] = <uint8_t>u
    return p + 1


def upconvert_message(data, Py_ssize_t pos, Py_ssize_t size, int magic, bint check_crc):
    """The v2 batch of the uncompressed v0/v1 message ``data[pos:pos + size]``, or None for a
    compressed wrapper (the caller's job): ``legacy_layout``'s checks, the stored CRC-32 (when
    ``check_crc``), then the bytes ``convert._upconvert_single`` builds."""
    cdef Py_buffer view
    cdef const uint8_t *b
    cdef const uint8_t *m
    cdef Py_ssize_t key_at, value_at, end, klen, vlen, body, covered, total
    cdef int64_t offset, ts
    cdef int32_t key_len, value_len
    cdef uint32_t stored_crc, computed
    cdef int attrs
    cdef uint8_t *out
    cdef uint8_t *p
    cdef uint8_t *crc_from
    cdef bytes result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        b = <const uint8_t *>view.buf
        if pos < 0 or size < 0 or pos + size > view.len:
            raise ValueError(f"message at {pos} of {size} bytes is outside the {view.len}-byte buffer")
        m = b + pos
        if magic == 1:
            if size - 12 < 22:
                raise CorruptRecordError(f"Record size {size - 12} is less than the minimum record "
                                         f"overhead (22)", pos)
            ts = _be64(m + 18)
            key_at = 26
        else:
            if size - 12 < 14:
                raise CorruptRecordError(f"Record size {size - 12} is less than the minimum record "
                                         f"overhead (14)", pos)
            ts = -1
            key_at = 18
        offset = _be64(m)
        stored_crc = <uint32_t>_be32(m + 12)
        attrs = m[17]
        if attrs & 0x07 > 3:
            raise CorruptRecordError(f"Invalid compression type id {attrs & 0x07} for magic {magic}", pos)
        end = size
        key_len = _be32(m + key_at)
        if key_len < -1 or key_len > end - key_at - 8:
            raise CorruptRecordError(f"Invalid key size {key_len} in legacy record", pos)
        value_at = key_at + 4 + (key_len if key_len > 0 else 0)
        value_len = _be32(m + value_at)
        if value_len < -1 or value_len > end - value_at - 4:
            raise CorruptRecordError(f"Invalid value size {value_len} in legacy record", pos)
        if check_crc:
            computed = <uint32_t>crc32(0, m + 16, <unsigned int>(size - 16))
            if computed != stored_crc:
                raise CorruptRecordError(
                    f"Record is corrupt (stored crc = {stored_crc}, computed crc = {computed})", pos)
        if attrs & 0x07:
            return None
        klen = key_len if key_len > 0 else 0
        vlen = value_len if value_len > 0 else 0
        body = 4 + _varint_size(key_len) + klen + _varint_size(value_len) + vlen
        covered = 40 + _varint_size(body) + body
        total = 21 + covered
        result = PyBytes_FromStringAndSize(NULL, total)
        out = <uint8_t *>PyBytes_AS_STRING(result)
        p = _put64(out, offset)
        p = _put32(p, <uint32_t>(covered + 9))
        p = _put32(p, 0xFFFFFFFF)  # partition leader epoch -1
        p[0] = 2
        p += 5  # magic, then the CRC, written last
        crc_from = p
        p[0] = 0
        p[1] = (attrs & 0x08) if magic == 1 else 0
        p = _put32(p + 2, 0)  # last offset delta
        p = _put64(p, ts)
        p = _put64(p, ts)
        p = _put64(p, -1)  # producer id
        p[0] = 0xFF  # producer epoch -1
        p[1] = 0xFF
        p = _put32(p + 2, 0xFFFFFFFF)  # base sequence -1
        p = _put32(p, 1)  # one record
        p = _put_varint(p, body)
        p[0] = 0  # attributes, timestamp delta 0, offset delta 0
        p[1] = 0
        p[2] = 0
        p = _put_varint(p + 3, key_len)
        memcpy(p, m + key_at + 4, klen)
        p = _put_varint(p + klen, value_len)
        memcpy(p, m + value_at + 4, vlen)
        p += vlen
        p[0] = 0  # no headers
        _put32(crc_from - 4, kw_crc32c(crc_from, covered))
        return result
    finally:
        PyBuffer_Release(&view)


# ------------------------------------------------------------------ decompression output

def fill_bytes(Py_ssize_t capacity, write):
    """``bytes`` of what ``write(view)`` puts at the start of a writable ``capacity``-byte view and
    counts (its return value): ``compression._fill_bytes_py`` without the zeroed scratch buffer
    and the copy out of it. The view is released when ``write`` returns."""
    capacity = max(capacity, 1)  # a fresh object: the empty bytes is a shared one, never resized
    cdef object out = PyBytes_FromStringAndSize(NULL, capacity)
    cdef object view = PyMemoryView_FromMemory(PyBytes_AS_STRING(out), capacity, PyBUF_WRITE)
    cdef Py_ssize_t n
    try:
        n = write(view)
    finally:
        view.release()
    if n < 0 or n > capacity:
        raise ValueError(f"wrote {n} bytes into a {capacity}-byte buffer")
    cdef PyObject *raw = <PyObject *>out
    Py_INCREF(out)  # _PyBytes_Resize may replace the object: hold it by its pointer while it does
    out = None
    _PyBytes_Resize(&raw, n)
    result = <object>raw
    Py_DECREF(result)
    return result
