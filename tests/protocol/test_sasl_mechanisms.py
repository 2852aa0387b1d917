"""SASL PLAIN and SCRAM server exchanges: RFC 7677's test vector, kafka-python's SCRAM client as the
peer, wrong passwords and users, and garbage tokens ending in the typed error."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient

from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.sasl_mechanisms import (
    SCRAM_FAILED,
    PlainServer,
    SaltedCredential,
    SaslAuthenticationError,
    ScramServer,
    parse_jaas_options,
    scram_credential,
)
from tests.fuzzing import FUZZ


def test_rfc_7677_vector() -> None:
    """RFC 7677 section 3: user "user", password "pencil", SCRAM-SHA-256."""
    credential = scram_credential("SCRAM-SHA-256", "pencil", iterations=4096,
                                  salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    server_nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    server = ScramServer("SCRAM-SHA-256", {"user": credential}.get, nonce=lambda: server_nonce)
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first.token == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                           b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert first.user is None
    final = server.step(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == type(final)(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", "user")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_scram_client(mechanism: str) -> None:
    credential = scram_credential(mechanism, "alice-secret", iterations=8192)
    users = {"alice": credential}
    client = ScramClient("alice", "alice-secret", mechanism)
    server = ScramServer(mechanism, users.get)
    client.process_server_first_message(server.step(client.first_message()).token)
    outcome = server.step(client.final_message())
    client.process_server_final_message(outcome.token)  # raises on a wrong server signature
    assert outcome.user == "alice"

    wrong = ScramClient("alice", "not-the-password", mechanism)
    server = ScramServer(mechanism, users.get)
    wrong.process_server_first_message(server.step(wrong.first_message()).token)
    with pytest.raises(SaslAuthenticationError, match=SCRAM_FAILED.format(mechanism)):
        server.step(wrong.final_message())
    with pytest.raises(SaslAuthenticationError, match=SCRAM_FAILED.format(mechanism)):
        ScramServer(mechanism, users.get).step(ScramClient("bob", "x", mechanism).first_message())


def test_scram_rejects_a_replayed_nonce_and_another_authzid() -> None:
    credential = scram_credential("SCRAM-SHA-256", "pw")
    server = ScramServer("SCRAM-SHA-256", {"u=,x": credential}.get)
    server.step(b"n,,n=u=3D=2Cx,r=abc")  # saslname escaping: "u=,x"
    with pytest.raises(SaslAuthenticationError):
        server.step(b"c=biws,r=abc,p=" + base64.b64encode(b"\0" * 32))  # the client's nonce only
    with pytest.raises(SaslAuthenticationError, match="authorization id that is different"):
        ScramServer("SCRAM-SHA-256", {"u": credential}.get).step(b"n,a=v,n=u,r=abc")
    with pytest.raises(SaslAuthenticationError, match="bad username encoding"):
        ScramServer("SCRAM-SHA-256", {"u": credential}.get).step(b"n,,n=u=41,r=abc")
    with pytest.raises(ProtocolError, match="out of range"):
        scram_credential("SCRAM-SHA-256", "pw", iterations=100)


def test_plain() -> None:
    server = PlainServer({"alice": "alice-secret"})
    assert server.step(b"\0alice\0alice-secret").user == "alice"
    assert server.step(b"alice\0alice\0alice-secret").user == "alice"
    for token, text in [(b"\0alice\0wrong", "Invalid username or password"),
                        (b"\0bob\0alice-secret", "Invalid username or password"),
                        (b"bob\0alice\0alice-secret", "authorization id that is different"),
                        (b"\0\0x", "username not specified"), (b"\0alice\0", "password not specified"),
                        (b"alice-secret", "expected 3 tokens, got 1")]:
        with pytest.raises(SaslAuthenticationError, match=text) as raised:
            server.step(token)
        assert "alice-secret" not in str(raised.value)


def test_jaas_options() -> None:
    text = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="a b\\"c" user_admin="admin-secret"\n user_alice=alice-secret;')
    assert parse_jaas_options(text) == {"username": "admin", "password": 'a b"c',
                                        "user_admin": "admin-secret", "user_alice": "alice-secret"}
    for bad in ["PlainLoginModule user_a=\"x\";", "M required user_a=\"x\"", "M required garbage;"]:
        with pytest.raises(ProtocolError) as raised:
            parse_jaas_options(bad)
        assert '"x"' not in str(raised.value)


CREDENTIAL = SaltedCredential(b"salt", b"\1" * 32, b"\2" * 32, 4096)


@FUZZ
@given(st.lists(st.binary(max_size=120), min_size=1, max_size=3))
def test_garbage_tokens_end_in_the_typed_error(tokens: list[bytes]) -> None:
    for server in (ScramServer("SCRAM-SHA-256", {"u": CREDENTIAL}.get), PlainServer({"u": "p"})):
        try:
            for token in tokens:
                server.step(token)
        except SaslAuthenticationError:
            pass


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_against_the_server(mechanism: str) -> None:
    from kraftwerk.protocol.sasl_mechanisms import ScramClient as KraftwerkScramClient

    stored = scram_credential(mechanism, "pencil", iterations=4096)
    server = ScramServer(mechanism, lambda user: stored if user == "u,=x" else None)
    client = KraftwerkScramClient(mechanism, "u,=x", "pencil")
    first = server.step(client.first())
    done = server.step(client.final(first.token))
    assert done.user == "u,=x"
    client.verify(done.token)
    with pytest.raises(SaslAuthenticationError, match="server signature"):
        client.verify(b"v=" + base64.b64encode(b"forged"))
    wrong = KraftwerkScramClient(mechanism, "u,=x", "eraser")
    server = ScramServer(mechanism, lambda user: stored)
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        server.step(wrong.final(server.step(wrong.first()).token))
