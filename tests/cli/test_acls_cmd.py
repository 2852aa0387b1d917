"""``kraftwerk acls``: Kafka's texts for the resource pattern and entry, and its usage errors
(refused before any connection)."""

from __future__ import annotations

import pytest

from kraftwerk.cli.acls_cmd import entry_text, pattern_text
from kraftwerk.cli.main import main


def test_kafkas_to_string_forms() -> None:
    assert pattern_text(("TOPIC", "orders", "LITERAL")) == (
        "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    )
    assert (
        pattern_text(("ANY", None, "MATCH"))
        == "ResourcePattern(resourceType=ANY, name=<any>, patternType=MATCH)"
    )
    assert entry_text(("User:alice", "*", "READ", "ALLOW")) == (
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    )


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["--add", "--topic", "t"],
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.",
        ),
        (
            ["--add", "--allow-principal", "User:a", "--resource-pattern-type", "match", "--topic", "t"],
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ),
        (
            ["--add", "--allow-principal", "User:a"],
            "You must provide at least one resource: --topic <topic> or "
            "--cluster or --group <group> or --delegation-token <Delegation "
            "Token ID>",
        ),
        (["--list", "--allow-principal", "User:a"], 'Option "[list]" can\'t be used with options'),
        (
            ["--add", "--producer", "--allow-principal", "User:a"],
            "With --producer you must specify a --topic",
        ),
        (
            ["--remove", "--principal", "User:a", "--topic", "t"],
            "The --principal option is only available if --list is set",
        ),
    ],
)
def test_usage_errors(argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["acls", "--bootstrap-server", "127.0.0.1:1", *argv])
    err = capsys.readouterr().err
    assert code == 1 and error in err and len(err.splitlines()) == 1
