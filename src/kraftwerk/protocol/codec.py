"""Encoders and decoders derived from message declarations.

For every (message, version) the first use generates one specialised Python function for each
direction from the declared fields (consecutive fixed-width fields become one ``struct`` call),
compiles it, and caches it. Values are plain dicts keyed by Kafka's JSON field names
(``timeoutMs``); a missing key means the field's default.

Decoders check every length and count against the bytes left before slicing, so random or
truncated input raises ``DecodeError`` and never allocates more than the input's size.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from kraftwerk.native import compiled
from kraftwerk.protocol.errors import DecodeError, EncodeError, UnsupportedVersionError
from kraftwerk.protocol.schema import Field, MessageSpec

Value = dict[str, Any]
Decoder = Callable[[bytes, int, int], tuple[Value, int]]
Encoder = Callable[[bytearray, Value], None]
#: a decode plan (see ``_Gen.plan``): nested tuples of field kinds, keys and defaults
PlanItem = tuple[Any, ...]
Plan = tuple[tuple[PlanItem, ...], tuple[tuple[str, Any], ...], tuple[tuple[int, PlanItem], ...], bool]

#: the compiled twin (an interpreter of decode plans), or None (pure Python)
NATIVE = compiled("kraftwerk.protocol._ccodec")

UNKNOWN_TAGGED = "_unknownTaggedFields"

_FIXED = {
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint16": ("H", 2),
    "uint32": ("I", 4),
    "float64": ("d", 8),
}
_MAX_CLASSIC_STRING = 0x7FFF


# ---------------------------------------------------------------- varint helpers (shared runtime)

def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint (at most 5 bytes, as Kafka's ByteUtils.readUnsignedVarint)."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint is longer than 5 bytes")


def read_uvarlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned 64-bit varint (at most 10 bytes)."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("unsigned varlong is longer than 10 bytes")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zig-zag signed 32-bit varint."""
    n, pos = read_uvarint(buf, pos)
    if n > 0xFFFFFFFF:
        raise DecodeError("varint does not fit in 32 bits")
    return (n >> 1) ^ -(n & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zig-zag signed 64-bit varint."""
    n, pos = read_uvarlong(buf, pos)
    if n > 0xFFFFFFFFFFFFFFFF:
        raise DecodeError("varlong does not fit in 64 bits")
    return (n >> 1) ^ -(n & 1), pos


_UVARINT_CACHE = [bytes([i]) for i in range(128)]


def uvarint(n: int) -> bytes:
    """Encode an unsigned varint."""
    if 0 <= n < 0x80:
        return _UVARINT_CACHE[n]
    if n < 0 or n > 0xFFFFFFFFFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint(n: int) -> bytes:
    """Encode a zig-zag signed 32-bit varint."""
    if not -(2**31) <= n < 2**31:
        raise EncodeError(f"varint out of range: {n}")
    return uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def varlong(n: int) -> bytes:
    """Encode a zig-zag signed 64-bit varint."""
    if not -(2**63) <= n < 2**63:
        raise EncodeError(f"varlong out of range: {n}")
    return uvarint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _too_long(what: str, n: int, left: int) -> DecodeError:
    return DecodeError(f"{what} length {n} exceeds the {left} bytes left")


def _bad_null(name: str) -> DecodeError:
    return DecodeError(f"non-nullable field {name} was serialized as null")


def _non_default(name: str, version: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(f"Attempted to write a non-default {name} at version {version}")


def _null_write(name: str) -> EncodeError:
    return EncodeError(f"non-nullable field {name} was serialized as null")


@lru_cache(maxsize=4096)
def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    """The UUID of 16 bytes, shared: a metadata log repeats a few ids (a topic's in each of its
    partitions, a broker's directories in every replica) millions of times."""
    return uuid.UUID(bytes=raw)


def _utf8(buf: bytes, pos: int, n: int) -> str:
    return buf[pos:pos + n].decode("utf-8")


def _check_tagged_end(pos: int, expected: int, tag: int) -> None:
    if pos != expected:
        raise DecodeError(f"tagged field {tag} declared {expected} bytes but its value did not fit them")


_RUNTIME: dict[str, Any] = {
    "_struct": struct,
    "_uuid": uuid_from_bytes,
    "_UUID_ZERO_BYTES": bytes(16),
    "_ruv": read_uvarint,
    "_uv": uvarint,
    "_UVC": _UVARINT_CACHE,
    "_DecodeError": DecodeError,
    "_too_long": _too_long,
    "_bad_null": _bad_null,
    "_non_default": _non_default,
    "_null_write": _null_write,
    "_utf8": _utf8,
    "_check_tagged_end": _check_tagged_end,
    "_EncodeError": EncodeError,
    "_UNKNOWN": UNKNOWN_TAGGED,
    "_pack_h": struct.Struct(">h").pack,
    "_pack_i": struct.Struct(">i").pack,
    "_MAX_CLASSIC_STRING": _MAX_CLASSIC_STRING,
}


# ---------------------------------------------------------------- code generation

class _Gen:
    """Generates the decode and encode functions of one (message, version)."""

    def __init__(self, spec: MessageSpec, version: int) -> None:
        self.spec = spec
        self.version = version
        self.flexible = spec.is_flexible(version)
        self.lines: list[str] = []
        self.ns: dict[str, Any] = dict(_RUNTIME)
        self.counter = 0

    def const(self, value: Any) -> str:
        self.counter += 1
        name = f"_C{self.counter}"
        self.ns[name] = value
        return name

    def fn_name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    # -- classification

    def present(self, f: Field) -> bool:
        return self.version in f.versions

    def tagged(self, f: Field) -> bool:
        return self.flexible and self.version in f.tagged_versions

    def nullable(self, f: Field) -> bool:
        return self.version in f.nullable_versions

    # -- decoding

    def emit_uvarint(self, ind: int, var: str) -> None:
        """Read an unsigned varint into ``var``; the one-byte case (almost all) is inlined."""
        self.emit(ind, f"{var} = buf[pos]")
        self.emit(ind, f"if {var} < 128: pos += 1")
        self.emit(ind, f"else: {var}, pos = _ruv(buf, pos)")

    def unpacker(self, code: str) -> str:
        return self.const(struct.Struct(">" + code).unpack_from)

    def gen_decoder(self, fields: tuple[Field, ...], owner: str) -> str:
        """Emit a function ``(buf, pos, end) -> (dict, pos)`` for a struct; returns its name."""
        nested: dict[int, str] = {}
        for i, f in enumerate(fields):
            if self.present(f) and f.is_struct:
                nested[i] = self.gen_decoder(f.fields, f"{owner}.{f.name}")
        name = self.fn_name("_dec")
        e = self.emit
        e(0, f"def {name}(buf, pos, end):")
        e(1, "r = {}")
        regular = [(i, f) for i, f in enumerate(fields) if self.present(f) and not self.tagged(f)]
        run: list[Field] = []
        for i, f in regular:
            if f.type in _FIXED and not f.is_array:
                run.append(f)
                continue
            self._flush_fixed_run(run)
            run = []
            self._decode_field(1, f, nested.get(i), "r")
        self._flush_fixed_run(run)
        for f in fields:
            if not self.present(f) or self.tagged(f):
                e(1, f"r[{f.json_name!r}] = {self._default_expr(f)}")
        if self.flexible:
            tagged = [(i, f) for i, f in enumerate(fields) if self.present(f) and self.tagged(f)]
            self.emit_uvarint(1, "n")
            e(1, "if n > end - pos: raise _too_long('tagged field count', n, end - pos)")
            e(1, "for _ in range(n):")
            e(2, "tag, pos = _ruv(buf, pos)")
            e(2, "size, pos = _ruv(buf, pos)")
            e(2, "if size > end - pos: raise _too_long('tagged field', size, end - pos)")
            e(2, "tag_end = pos + size")
            first = True
            for i, f in tagged:
                kw = "if" if first else "elif"
                first = False
                e(2, f"{kw} tag == {f.tag}:")
                self._decode_field(3, f, nested.get(i), "r", limit="tag_end")
                e(3, f"_check_tagged_end(pos, tag_end, {f.tag})")
            if tagged:
                e(2, "else:")
                e(3, "r.setdefault(_UNKNOWN, []).append((tag, bytes(buf[pos:tag_end])))")
                e(3, "pos = tag_end")
            else:
                e(2, "r.setdefault(_UNKNOWN, []).append((tag, bytes(buf[pos:tag_end])))")
                e(2, "pos = tag_end")
        e(1, "return r, pos")
        e(0, "")
        return name

    def _flush_fixed_run(self, run: list[Field]) -> None:
        if not run:
            return
        fmt = ">" + "".join(_FIXED[f.type][0] for f in run)
        s = struct.Struct(fmt)
        c = self.const(s.unpack_from)
        targets = ", ".join(f"r[{f.json_name!r}]" for f in run)
        if len(run) == 1:
            targets += ","
        self.emit(1, f"{targets} = {c}(buf, pos)")
        self.emit(1, f"pos += {s.size}")

    def _default_expr(self, f: Field) -> str:
        """An expression building a fresh default (a literal, so no deep copy per decode)."""
        return self._literal(f.default_value())

    def _literal(self, value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(self._literal(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k!r}: {self._literal(v)}" for k, v in value.items()) + "}"
        return self.const(value)

    def _decode_field(self, ind: int, f: Field, nested: str | None, target: str, limit: str = "end") -> None:
        """Emit code that reads field ``f`` into ``target[json_name]``."""
        e = self.emit
        key = f"{target}[{f.json_name!r}]"
        nullable = self.nullable(f)
        if f.is_array:
            if self.flexible:
                self.emit_uvarint(ind, "n")
                e(ind, "n -= 1")
            else:
                e(ind, f"n, = {self.unpacker('i')}(buf, pos)")
                e(ind, "pos += 4")
            e(ind, "if n < 0:")
            if nullable:
                e(ind + 1, f"{key} = None")
            else:
                e(ind + 1, f"raise _bad_null({f.name!r})")
            e(ind, "else:")
            e(ind + 1, f"if n > {limit} - pos: raise _too_long('array', n, {limit} - pos)")
            e(ind + 1, "a = []")
            e(ind + 1, "for _ in range(n):")
            self._decode_element(ind + 2, f.element_type, nested, "a.append(", ")", limit, f.name)
            e(ind + 1, f"{key} = a")
            return
        if f.is_struct:
            if nullable:
                e(ind, "if buf[pos] >= 128:")
                e(ind + 1, "pos += 1")
                e(ind + 1, f"{key} = None")
                e(ind, "else:")
                e(ind + 1, "pos += 1")
                e(ind + 1, f"{key}, pos = {nested}(buf, pos, {limit})")
            else:
                e(ind, f"{key}, pos = {nested}(buf, pos, {limit})")
            return
        self._decode_primitive(ind, f.type, f"{key} = ", "", nullable, limit, f.name)

    def _decode_element(self, ind: int, typ: str, nested: str | None, pre: str, post: str, limit: str,
                        name: str) -> None:
        if nested is not None:
            self.emit(ind, f"v, pos = {nested}(buf, pos, {limit})")
            self.emit(ind, f"{pre}v{post}")
            return
        self._decode_primitive(ind, typ, pre, post, False, limit, name)

    def _decode_primitive(self, ind: int, typ: str, pre: str, post: str, nullable: bool, limit: str,
                          name: str) -> None:
        e = self.emit
        if typ in _FIXED:
            code, size = _FIXED[typ]
            e(ind, f"{pre}{self.unpacker(code)}(buf, pos)[0]{post}")
            e(ind, f"pos += {size}")
        elif typ == "bool":
            e(ind, f"{pre}buf[pos] != 0{post}")
            e(ind, "pos += 1")
        elif typ == "uuid":
            e(ind, f"if pos + 16 > {limit}: raise _too_long('uuid', 16, {limit} - pos)")
            e(ind, f"{pre}_uuid(buf[pos:pos + 16]){post}")
            e(ind, "pos += 16")
        elif typ in ("string", "bytes", "records"):
            if self.flexible:
                self.emit_uvarint(ind, "n")
                e(ind, "n -= 1")
            elif typ == "string":
                e(ind, f"n, = {self.unpacker('h')}(buf, pos)")
                e(ind, "pos += 2")
            else:
                e(ind, f"n, = {self.unpacker('i')}(buf, pos)")
                e(ind, "pos += 4")
            e(ind, "if n < 0:")
            if nullable:
                e(ind + 1, f"{pre}None{post}")
            else:
                e(ind + 1, f"raise _bad_null({name!r})")
            e(ind, "else:")
            e(ind + 1, f"if n > {limit} - pos: raise _too_long({typ!r}, n, {limit} - pos)")
            if typ == "string":
                e(ind + 1, f"{pre}_utf8(buf, pos, n){post}")
            else:
                e(ind + 1, f"{pre}bytes(buf[pos:pos + n]){post}")
            e(ind + 1, "pos += n")
        else:  # pragma: no cover - schema validation rejects unknown types
            raise AssertionError(typ)

    # -- encoding

    def gen_encoder(self, fields: tuple[Field, ...], owner: str) -> str:
        """Emit a function ``(out, r) -> None`` that appends a struct's bytes to ``out``."""
        nested: dict[int, str] = {}
        for i, f in enumerate(fields):
            if self.present(f) and f.is_struct:
                nested[i] = self.gen_encoder(f.fields, f"{owner}.{f.name}")
        name = self.fn_name("_enc")
        e = self.emit
        e(0, f"def {name}(out, r):")
        e(1, "get = r.get")
        for f in fields:
            if not self.present(f):
                d = self.const(f.default_value())
                e(1, f"v = get({f.json_name!r}, {d})")
                if not f.ignorable:
                    e(1, f"if v != {d}: raise _non_default({f.name!r}, {self.version})")
        run: list[Field] = []
        for i, f in enumerate(fields):
            if not self.present(f) or self.tagged(f):
                continue
            if f.type in _FIXED and not f.is_array:
                run.append(f)
                continue
            self._flush_fixed_pack(run)
            run = []
            e(1, f"v = get({f.json_name!r}, {self.const(f.default_value())})")
            self._encode_field(1, f, nested.get(i), "out")
        self._flush_fixed_pack(run)
        if self.flexible:
            tagged = sorted(
                ((i, f) for i, f in enumerate(fields) if self.present(f) and self.tagged(f)),
                key=lambda p: p[1].tag if p[1].tag is not None else -1,
            )
            e(1, "tags = []")
            for i, f in tagged:
                d = self.const(f.default_value())
                e(1, f"v = get({f.json_name!r}, {d})")
                e(1, f"if v != {d}:")
                e(2, "t = bytearray()")
                self._encode_field(2, f, nested.get(i), "t")
                e(2, f"tags.append(({f.tag}, t))")
            e(1, "unknown = get(_UNKNOWN)")
            e(1, "if unknown:")
            e(2, "tags.extend(unknown)")
            e(2, "tags.sort(key=lambda p: p[0])")
            e(1, "out += _uv(len(tags))")
            e(1, "for tag, data in tags:")
            e(2, "out += _uv(tag)")
            e(2, "out += _uv(len(data))")
            e(2, "out += data")
        e(1, "return None")
        e(0, "")
        return name

    def _flush_fixed_pack(self, run: list[Field]) -> None:
        if not run:
            return
        fmt = ">" + "".join(_FIXED[f.type][0] for f in run)
        c = self.const(struct.Struct(fmt).pack)
        args = ", ".join(f"get({f.json_name!r}, {self.const(f.default_value())})" for f in run)
        self.emit(1, f"out += {c}({args})")

    def _encode_field(self, ind: int, f: Field, nested: str | None, out: str) -> None:
        """Emit code that appends the value ``v`` of field ``f`` to ``out``."""
        e = self.emit
        nullable = self.nullable(f)
        if f.is_array:
            e(ind, "if v is None:")
            if not nullable:
                e(ind + 1, f"raise _null_write({f.name!r})")
            elif self.flexible:
                e(ind + 1, f"{out}.append(0)")
            else:
                e(ind + 1, f"{out} += _pack_i(-1)")
            e(ind, "else:")
            if self.flexible:
                e(ind + 1, f"{out} += _uv(len(v) + 1)")
            else:
                e(ind + 1, f"{out} += _pack_i(len(v))")
            e(ind + 1, "for x in v:")
            if nested is not None:
                e(ind + 2, f"{nested}({out}, x)")
            else:
                self._encode_primitive(ind + 2, f.element_type, "x", out, False, f.name)
            return
        if f.is_struct:
            if nullable:
                e(ind, "if v is None:")
                e(ind + 1, f"{out}.append(255)")
                e(ind, "else:")
                e(ind + 1, f"{out}.append(1)")
                e(ind + 1, f"{nested}({out}, v)")
            else:
                e(ind, "if v is None:")
                e(ind + 1, f"raise _null_write({f.name!r})")
                e(ind, f"{nested}({out}, v)")
            return
        self._encode_primitive(ind, f.type, "v", out, nullable, f.name)

    def _encode_primitive(self, ind: int, typ: str, var: str, out: str, nullable: bool, name: str) -> None:
        e = self.emit
        if typ in _FIXED:
            c = self.const(struct.Struct(">" + _FIXED[typ][0]).pack)
            e(ind, f"{out} += {c}({var})")
        elif typ == "bool":
            e(ind, f"{out}.append(1 if {var} else 0)")
        elif typ == "uuid":
            e(ind, f"{out} += {var}.bytes")
        elif typ in ("string", "bytes", "records"):
            e(ind, f"if {var} is None:")
            if not nullable:
                e(ind + 1, f"raise _null_write({name!r})")
            elif self.flexible:
                e(ind + 1, f"{out}.append(0)")
            elif typ == "string":
                e(ind + 1, f"{out} += _pack_h(-1)")
            else:
                e(ind + 1, f"{out} += _pack_i(-1)")
            e(ind, "else:")
            data = f"{var}.encode('utf-8')" if typ == "string" else var
            e(ind + 1, f"b = {data}")
            if self.flexible:
                e(ind + 1, f"{out} += _uv(len(b) + 1)")
            elif typ == "string":
                e(ind + 1, "if len(b) > _MAX_CLASSIC_STRING:")
                e(ind + 2, f"raise _EncodeError('string field {name} is longer than 32767 bytes')")
                e(ind + 1, f"{out} += _pack_h(len(b))")
            else:
                e(ind + 1, f"{out} += _pack_i(len(b))")
            e(ind + 1, f"{out} += b")
        else:  # pragma: no cover
            raise AssertionError(typ)

    # -- the decode plan: the same classification as data, for the compiled twin's interpreter

    def plan(self, fields: tuple[Field, ...]) -> Plan:
        """The decoder of a struct as nested tuples: ``(regular, defaults, tagged, flexible)``.

        ``regular`` lists the untagged fields present at this version in wire order, a run of
        fixed-width ones as one ``("fixed", ((key, struct code), ...))`` item (one bounds check for
        the run, as the generated code unpacks it at once); ``defaults`` pairs the key of every
        absent or tagged field with its default; ``tagged`` pairs each tag with its field's item.
        """
        regular: list[PlanItem] = []
        run: list[tuple[str, str]] = []
        for f in fields:
            if not self.present(f) or self.tagged(f):
                continue
            if f.type in _FIXED and not f.is_array:
                run.append((f.json_name, _FIXED[f.type][0]))
                continue
            if run:
                regular.append(("fixed", tuple(run)))
                run = []
            regular.append(self._plan_item(f))
        if run:
            regular.append(("fixed", tuple(run)))
        defaults = tuple((f.json_name, f.default_value()) for f in fields
                         if not self.present(f) or self.tagged(f))
        tagged = tuple((f.tag, self._plan_item(f)) for f in fields
                       if self.present(f) and self.tagged(f) and f.tag is not None)
        return tuple(regular), defaults, tagged, self.flexible

    def _plan_item(self, f: Field) -> PlanItem:
        if f.type in _FIXED:
            return "fixed", ((f.json_name, _FIXED[f.type][0]),)
        if f.is_array:
            elem = f.element_type
            sub = self.plan(f.fields) if f.is_struct else None
            element = (_FIXED[elem][0] if elem in _FIXED else elem, sub)
            return "array", f.json_name, f.name, self.nullable(f), element
        if f.is_struct:
            return "struct", f.json_name, f.name, self.nullable(f), self.plan(f.fields)
        return f.type, f.json_name, f.name, self.nullable(f), None

    def compile(self) -> tuple[Decoder, Encoder]:
        dec = self.gen_decoder(self.spec.fields, self.spec.name)
        enc = self.gen_encoder(self.spec.fields, self.spec.name)
        source = "\n".join(self.lines)
        code = compile(source, f"<kraftwerk codec {self.spec.name} v{self.version}>", "exec")
        exec(code, self.ns)
        return self.ns[dec], self.ns[enc]


def _codec(spec: MessageSpec, version: int) -> tuple[Decoder, Encoder]:
    """The (cached) decoder and encoder of a (message, version): the generated Python ones, the
    decoder replaced by the compiled twin's interpreter of :meth:`_Gen.plan` when it is built.

    Cached by the spec's identity: hashing a frozen spec means hashing every field declaration,
    which cost more than decoding a small record."""
    key = (id(spec), version)
    hit = _CODECS.get(key)
    if hit is None or hit[0] is not spec:
        gen = _Gen(spec, version)
        dec, enc = gen.compile()
        if NATIVE is not None:
            dec = NATIVE.decoder(gen.plan(spec.fields), uuid_from_bytes, UNKNOWN_TAGGED)
        hit = _CODECS[key] = (spec, dec, enc)
    return hit[1], hit[2]


#: (id(spec), version) -> (spec, decoder, encoder); the spec is kept so that its id stays its own
_CODECS: dict[tuple[int, int], tuple[MessageSpec, Decoder, Encoder]] = {}


def generated_source(spec: MessageSpec, version: int) -> str:
    """The Python source generated for a (message, version); for debugging and docs."""
    gen = _Gen(spec, version)
    gen.gen_decoder(spec.fields, spec.name)
    gen.gen_encoder(spec.fields, spec.name)
    return "\n".join(gen.lines)


def _check_version(spec: MessageSpec, version: int) -> None:
    if version not in spec.valid_versions:
        raise UnsupportedVersionError(
            f"{spec.name} version {version} is not supported; valid versions are {spec.valid_versions}"
        )


_DECODE_FAILURES = (struct.error, IndexError, UnicodeDecodeError, ValueError, OverflowError)
_ENCODE_FAILURES = (struct.error, TypeError, AttributeError, UnicodeEncodeError, ValueError, OverflowError)


def decoder_for(spec: MessageSpec, version: int) -> Decoder:
    """The decoder of a (message, version) :func:`decode_from` uses (``buf`` must be ``bytes``)."""
    _check_version(spec, version)
    return _codec(spec, version)[0]


def decode_from(spec: MessageSpec, version: int, buf: bytes, pos: int = 0, end: int | None = None
                ) -> tuple[Value, int]:
    """Decode one message body starting at ``pos``; returns the value and the position after it."""
    hit = _CODECS.get((id(spec), version))
    if hit is not None and hit[0] is spec:  # cached: the version was checked when it was built
        dec = hit[1]
    else:
        _check_version(spec, version)
        dec = _codec(spec, version)[0]
    if not isinstance(buf, bytes):
        buf = bytes(buf)
    limit = len(buf) if end is None else end
    try:
        return dec(buf, pos, limit)
    except DecodeError:
        raise
    except _DECODE_FAILURES as exc:
        raise DecodeError(f"cannot decode {spec.name} v{version}: {type(exc).__name__}: {exc}") from None


def decode(spec: MessageSpec, version: int, data: bytes) -> Value:
    """Decode a whole buffer as one message body; trailing bytes are an error."""
    value, pos = decode_from(spec, version, data)
    if pos != len(data):
        raise DecodeError(f"{len(data) - pos} trailing bytes after {spec.name} v{version}")
    return value


def encode_into(spec: MessageSpec, version: int, value: Value, out: bytearray) -> None:
    """Append the encoding of ``value`` at ``version`` to ``out``."""
    _check_version(spec, version)
    enc = _codec(spec, version)[1]
    try:
        enc(out, value)
    except (EncodeError, UnsupportedVersionError):
        raise
    except _ENCODE_FAILURES as exc:
        raise EncodeError(f"cannot encode {spec.name} v{version}: {type(exc).__name__}: {exc}") from None


def encode(spec: MessageSpec, version: int, value: Value) -> bytes:
    """Encode ``value`` as a message body at ``version``."""
    out = bytearray()
    encode_into(spec, version, value, out)
    return bytes(out)


def default_value(spec: MessageSpec) -> Value:
    """A value with every field at its default: what Kafka's no-argument constructor builds."""
    return {f.json_name: f.default_value() for f in spec.fields}

