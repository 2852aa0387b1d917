"""Java ``Properties`` text: ``Properties.load`` syntax and ``store`` escapes round-tripping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.config.errors import PropertiesSyntaxError
from kraftwerk.config.properties import (
    dump_properties,
    escape_property,
    parse_properties,
    properties_dict,
    properties_values,
)


def test_load_syntax() -> None:
    text = ("# c\n! c\n  key1 = v1\nkey2:v2\nkey3 v3\nkey4=a\\\n    b\n\\u0041=\\u00e9\n"
            "\n   \nkey5\nkey6 = = x\nkey7 : \\\n\nkey8=\\t\\n\\r\\f\\q\\\\\nk\\=ey\\ 9=v\n"
            "a\\\n # not a comment\n")
    got = {e.key: (e.value, e.line) for e in parse_properties(text)}
    assert got == {"key1": ("v1", 3), "key2": ("v2", 4), "key3": ("v3", 5), "key4": ("ab", 6),
                   "A": ("\u00e9", 8), "key5": ("", 11), "key6": ("= x", 12), "key7": ("", 13),
                   "key8": ("\t\n\r\fq\\", 15), "k=ey 9": ("v", 16), "a#": ("not a comment", 17)}


def test_line_ends_and_repeats() -> None:
    assert properties_values("a=1\r\nb=2\rc=3\nb=4") == {"a": "1", "b": "4", "c": "3"}
    entries = parse_properties("x=1\nx=2\n")
    assert [e.value for e in entries] == ["1", "2"] and properties_dict(entries)["x"].line == 2
    assert properties_values("k=trailing\\") == {"k": "trailing"}  # a final backslash joins nothing
    assert properties_values("k=\\\\") == {"k": "\\"}
    assert properties_values("\tk\tv\f") == {"k": "v\f"}  # only leading blanks are skipped


def test_malformed_unicode_escape_names_the_line() -> None:
    for bad in ("a=1\nb=\\u12\n", "a=1\nb=\\u12zz\n", "a=1\n\\u00g1=x\n"):
        with pytest.raises(PropertiesSyntaxError) as caught:
            parse_properties(bad, "server.properties")
        assert str(caught.value) == "server.properties line 2: Malformed \\uxxxx encoding."
        assert (caught.value.line, caught.value.detail) == (2, "Malformed \\uxxxx encoding.")


def test_escapes_as_store_writes_them() -> None:
    assert escape_property(" a b", is_key=True) == "\\ a\\ b"
    assert escape_property(" a b", is_key=False) == "\\ a b"
    assert escape_property("=:#!\\\t\n\r\f", is_key=False) == "\\=\\:\\#\\!\\\\\\t\\n\\r\\f"
    assert dump_properties({"k": "v", "": ""}) == "k=v\n=\n"


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)))


@given(st.dictionaries(_TEXT, _TEXT))
def test_dump_parses_back(props: dict[str, str]) -> None:
    assert properties_values(dump_properties(props)) == props


@given(_TEXT, _TEXT)
def test_java_escaped_value_round_trip(key: str, value: str) -> None:
    line = f"{escape_property(key, is_key=True)} = {escape_property(value, is_key=False)}"
    assert properties_values(line) == {key: value}
    encoded = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in value)
    assert properties_values(f"{escape_property(key, is_key=True)}:{encoded}") == {key: value}


@given(st.text())
def test_any_text_parses_or_names_a_bad_escape(text: str) -> None:
    try:
        entries = parse_properties(text)
    except PropertiesSyntaxError as exc:
        assert "\\u" in text and exc.detail == "Malformed \\uxxxx encoding."
    else:
        assert all(e.line >= 1 for e in entries)
