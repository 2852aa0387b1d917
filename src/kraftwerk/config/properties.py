"""Java ``Properties`` text, read and written as the JDK does: the one parser of the code base.

``server.properties``, ``meta.properties`` and ``--command-config`` files all go through
:func:`parse_properties`, which follows ``Properties.load``: ``\\n``, ``\\r`` or ``\\r\\n``
line ends, ``#``/``!`` comment lines, leading blanks skipped, a line ending in an odd number of
backslashes continued on the next one, the key ending at the first unescaped ``=``, ``:`` or
blank, and ``\\t \\n \\r \\f \\uNNNN`` escapes (any other escaped character stands for itself).
:func:`dump_properties` writes what ``Properties.store(Writer, ...)`` writes for each pair, so a
dump parses back to the same pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kraftwerk.config.errors import PropertiesSyntaxError

_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = "0123456789abcdefABCDEF"


@dataclass(frozen=True, slots=True)
class PropertyEntry:
    """One key/value pair and the (1-based) line its logical line starts on."""

    key: str
    value: str
    line: int


def parse_properties(text: str, source: str = "<properties>") -> tuple[PropertyEntry, ...]:
    """Every pair of ``text`` in file order (a repeated key appears twice; the last one wins in
    :func:`properties_dict`). A malformed ``\\uNNNN`` raises :class:`PropertiesSyntaxError`."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    entries: list[PropertyEntry] = []
    i = 0
    while i < len(lines):
        start = i + 1
        logical = lines[i].lstrip(_BLANKS)
        i += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical) and i < len(lines):
            logical = logical[:-1] + lines[i].lstrip(_BLANKS)
            i += 1
        if _continues(logical):  # a backslash ending the last line joins nothing and is dropped
            logical = logical[:-1]
        key, value = _split(logical)
        entries.append(PropertyEntry(_unescape(key, source, start), _unescape(value, source, start), start))
    return tuple(entries)


def properties_dict(entries: Iterable[PropertyEntry]) -> dict[str, PropertyEntry]:
    """Key → entry; a later entry for the same key replaces an earlier one, as in Java."""
    return {e.key: e for e in entries}


def properties_values(text: str, source: str = "<properties>") -> dict[str, str]:
    """Key → value of ``text`` (the last value of a repeated key)."""
    return {e.key: e.value for e in parse_properties(text, source)}


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Key and raw value: the key ends at the first unescaped ``=``, ``:`` or blank; blanks and one
    ``=``/``:`` after it are skipped (``Properties.load``)."""
    end = 0
    while end < len(line):
        c = line[end]
        if c == "\\":
            end += 2
            continue
        if c in "=:" or c in _BLANKS:
            break
        end += 1
    start = end
    while start < len(line) and line[start] in _BLANKS:
        start += 1
    if start < len(line) and line[start] in "=:":
        start += 1
        while start < len(line) and line[start] in _BLANKS:
            start += 1
    return line[:end], line[start:]


def _unescape(s: str, source: str, line: int) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        i += 1
        if c != "\\" or i == len(s):
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i:i + 4]
            if len(digits) < 4 or any(d not in _HEX for d in digits):
                raise PropertiesSyntaxError(source, line, "Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    return "".join(out)


def escape_property(s: str, *, is_key: bool) -> str:
    """``Properties.saveConvert`` for a ``Writer``: backslash, the four control escapes and
    ``= : # !`` are escaped; a space is escaped everywhere in a key and only first in a value."""
    out: list[str] = []
    for i, c in enumerate(s):
        if c == " ":
            out.append("\\ " if is_key or i == 0 else " ")
        elif c == "\\":
            out.append("\\\\")
        elif c in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(c)])
        elif c in "=:#!":
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def dump_properties(props: Mapping[str, str]) -> str:
    """``key=value`` lines (escaped, in the mapping's order) that parse back to ``props``."""
    return "".join(f"{escape_property(k, is_key=True)}={escape_property(v, is_key=False)}\n"
                   for k, v in props.items())
