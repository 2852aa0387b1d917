"""Every command and every option with a wrong value: a non-zero exit, one line on stderr, no traceback.

The cases are generated from the ``kraftwerk`` parser itself: the walk visits every sub-command
and every option that takes a value, and feeds it the wrong values of its kind, looked up by the
option's ``type`` (``kraftwerk.cli.args``) or its ``choices``. A new option is walked without
editing this file; an option whose type the walk does not know fails here until its wrong values
are added to ``KINDS``. Other required options get a valid value of their kind; commands that
would contact a cluster get an address that refuses connections.

Two sorts of wrong values: the ones argparse refuses (exit 2, the one line names the argument),
and the ones the command itself refuses (exit 1; the error is the last stderr line, anything
before it is a log line such as Kafka's "config supplied but not used" warning).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.cli import args as kinds
from kraftwerk.cli.main import build_parser, main
from kraftwerk.storage.format import random_cluster_id

# --------------------------------------------------------------------------------- values


@dataclass
class Env:
    """Where a case's files live, and an address nobody listens on."""

    tmp: Path
    refused: str

    def file(self, name: str, data: bytes) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def dir(self, name: str) -> Path:
        path = self.tmp / name
        path.mkdir(parents=True, exist_ok=True)
        return path


Value = Callable[[Env], str]

RANDOM = bytes(range(256)) * 3 + b"\x00\xff" * 100  # not text, not any Kafka file's framing


def const(text: str) -> Value:
    return lambda env: text


def missing(env: Env) -> str:
    return str(env.tmp / "no-such-path")


def a_dir(env: Env) -> str:
    return str(env.dir("a-directory"))


def a_file(env: Env) -> str:
    return str(env.file("a-file", b"x"))


def under_a_file(env: Env) -> str:
    return str(Path(a_file(env)) / "below")


def in_missing_dir(env: Env) -> str:
    return str(env.tmp / "no-such-dir" / "out")


def random_file(name: str) -> Value:
    return lambda env: str(env.file(f"random/{name}", RANDOM))


def empty_file(env: Env) -> str:
    return str(env.file("empty/empty.properties", b""))


def new_path(env: Env) -> str:
    return str(env.tmp / "new")


def server_properties(env: Env) -> str:
    data = env.tmp / "data"
    port = env.refused.rsplit(":", 1)[1]
    text = (f"process.roles=broker,controller\nnode.id=1\nlog.dirs={data}\n"
            f"controller.quorum.voters=1@127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
            f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{port}\n")
    return str(env.file("server.properties", text.encode()))


def cluster_dir(env: Env) -> str:
    """A stopped cluster's state (what ``cluster up`` then ``down`` leave)."""
    port = int(env.refused.rsplit(":", 1)[1])
    state = {"clusterId": random_cluster_id(),
             "nodes": [{"node_id": 1, "roles": "controller", "port": port, "software_version": None,
                        "pid": None, "extra": {}}]}
    root = env.dir("cluster")
    (root / "cluster.json").write_text(json.dumps(state))
    return str(root)


def garbage_dir(env: Env) -> str:
    """Random bytes under the names a metadata log dir and a cluster dir hold."""
    root = env.dir("garbage")
    for name in ("cluster.json", "00000000000000000000.log", "00000000000000000000.index",
                 "00000000000000000000-0000000000.checkpoint", "quorum-state"):
        (root / name).write_bytes(RANDOM)
    return str(root)


def misshapen_cluster_dir(env: Env) -> str:
    root = env.dir("misshapen")
    (root / "cluster.json").write_text(json.dumps({"clusterId": 7, "nodes": [{"bogus": 1}]}))
    return str(root)


def empty_dir(env: Env) -> str:
    return str(env.dir("empty-dir"))


@dataclass(frozen=True)
class Kind:
    """A valid value (for required options not under test) and the wrong ones of a kind."""

    valid: Value
    refused_by_parser: tuple[Value, ...] = ()
    refused_by_command: tuple[Value, ...] = ()


KAFKA_FILES = ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
               "00000000000000000000-0000000000.checkpoint")

KINDS: dict[Any, Kind] = {
    kinds.non_negative_int: Kind(const("1"), (const("abc"), const("-1"))),
    kinds.positive_int: Kind(const("1"), (const("abc"), const("0"))),
    kinds.non_negative_float: Kind(const("1"), (const("abc"), const("-1"), const("nan"))),
    kinds.positive_float: Kind(const("1"), (const("abc"), const("0"), const("inf"))),
    int: Kind(const("1"), (const("abc"),)),  # the sim layer's own options (it cannot import the CLI)
    kinds.input_file: Kind(server_properties, (missing, a_dir),
                           (random_file("random.properties"), empty_file)),
    kinds.input_files: Kind(lambda env: str(env.file("seg/00000000000000000000.log", b"")),
                            (missing, a_dir, const(",")), tuple(random_file(n) for n in KAFKA_FILES)),
    kinds.input_dir: Kind(cluster_dir, (missing, a_file), (empty_dir, garbage_dir, misshapen_cluster_dir)),
    kinds.dir_list: Kind(empty_dir, (const(","),), (missing, a_file)),
    kinds.output_dir: Kind(new_path, (a_file, under_a_file)),
    kinds.output_file: Kind(new_path, (a_dir, under_a_file, in_missing_dir)),
    kinds.output_file_or_dir: Kind(new_path, (under_a_file, in_missing_dir)),
    kinds.cluster_id: Kind(lambda env: random_cluster_id(), (), (const("abc"), const("not/base64!"))),
    kinds.directory_id: Kind(lambda env: random_cluster_id(), (), (const("abc"), const("not/base64!"))),
    kinds.release_version: Kind(const("3.9"), (), (const("bogus"), const("9.9-IV9"))),
    kinds.release_or_level: Kind(const("3.9"), (), (const("bogus"), const("99999"))),
    kinds.software_version: Kind(const("4.3"), (const("bogus"), const("0.1"))),
    kinds.node_software_version: Kind(const("1=4.3"), (const("x"), const("1=bogus"))),
    kinds.feature_level: Kind(const("group.version=1"), (),
                              (const("noequals"), const("group.version=abc"))),
    kinds.feature_name: Kind(const("group.version"), (const(""), const("bad name!"))),
    kinds.scram_credential: Kind(const("SCRAM-SHA-256=[name=a,password=b]"), (),
                                 (const("garbage"), const("SCRAM-SHA-1=[name=a,password=b]"))),
    kinds.scram_mechanism_config: Kind(const("SCRAM-SHA-256=[password=x]"), (), (
        const("garbage"), const("SCRAM-SHA-256=[iterations=abc,password=x]"))),
    kinds.user_name: Kind(const("alice"), (const(""),)),
    kinds.bootstrap_servers: Kind(lambda env: env.refused, (const("nohostport"), const("host:notaport"))),
    kinds.zookeeper_connect: Kind(lambda env: env.refused,
                                  (const("nohostport"), const("host:notaport"),
                                   const("127.0.0.1:2181/chroot/")),
                                  (lambda env: env.refused,)),
    kinds.initial_controllers: Kind(const("1@127.0.0.1:9093:AAAAAAAAAAAAAAAAAAAAAA"), (),
                                    (const("garbage"), const("1@host:notaport:x"))),
    kinds.key_value: Kind(const("a=b"), (const("novalue"),)),
    kinds.spark_master: Kind(const("local[1]"), (const("bogus"), const("local[0]"))),
    kinds.api_name: Kind(const("ApiVersions"), (const("NoSuchMessage"),)),
    kinds.hex_bytes: Kind(const(""), (const("zz"),), (const("ffff"),)),
    kinds.json_value: Kind(const("{}"), (const("{oops"),), (const("[]"), const('{"apiKeys": 7}'))),
    kinds.log_level: Kind(const("INFO"), (const("bogus"),)),
    kinds.start_offset: Kind(const("beginning"), (const("-3"), const("later"))),
    kinds.delimiter: Kind(const(":"), (const(""),)),
    kinds.topic_name: Kind(const("orders"), (const(""), const("a b"), const("x" * 250))),
    kinds.entity_name: Kind(const("orders"), (), (const("a b"),)),
    kinds.config_pairs: Kind(const("retention.ms=1000"), (const("noequals"), const("bad key!=1"))),
    kinds.config_keys: Kind(const("retention.ms"), (const(","), const("bad key!"))),
    kinds.replica_assignment: Kind(const("1:2,2:3"), (const("a:b"), const("1:1"), const("1:2,3"))),
    kinds.acl_principal: Kind(const("User:alice"), (const("alice"), const("User:"))),
    kinds.acl_operation: Kind(const("Read"), (const("Fly"), const("Any"))),
    kinds.acl_resource_name: Kind(const("orders"), (const(" "),)),
    kinds.resource_pattern_type: Kind(const("literal"), (const("unknown"), const("regex"))),
}

WRONG_CHOICE = const("no-such-choice")


def kind_of(action: argparse.Action) -> Kind:
    if action.choices is not None:
        return Kind(const(str(next(iter(action.choices)))), (WRONG_CHOICE,))
    kind = KINDS.get(action.type)
    if kind is None:
        name = getattr(action.type, "__name__", action.type)
        raise AssertionError(f"option {action.option_strings or action.dest} has type {name}, which the walk "
                             "does not know: use a type from kraftwerk.cli.args, or add its wrong values "
                             "to KINDS")
    return kind


# --------------------------------------------------------------------------------- the walk


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction[Any]]:
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
             ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser with its command path (groups and leaves)."""
    yield path, parser
    for sub in _subparsers(parser):
        for name, child in sub.choices.items():
            yield from commands(child, (*path, name))


def value_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options (and positionals) that take a value."""
    return [a for a in parser._actions
            if a.nargs != 0 and not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction,
                                                   argparse._VersionAction))]


def switches(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options that take no value (``--dry-run``), but not --help and --version."""
    return [a for a in parser._actions if a.nargs == 0 and a.option_strings
            and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]


def is_leaf(parser: argparse.ArgumentParser) -> bool:
    return parser.get_default("func") is not None


@dataclass(frozen=True)
class Case:
    path: tuple[str, ...]
    action: argparse.Action | None
    value: Value | None
    by_parser: bool
    label: str
    omit: argparse.Action | None = None
    extra: tuple[str, ...] = field(default=())

    def argv(self, env: Env, parser: argparse.ArgumentParser) -> list[str]:
        leaf = leaf_parser(parser, self.path)
        exclusive = {id(a): g for g in leaf._mutually_exclusive_groups for a in g._group_actions}
        chosen: set[int] = set()
        if self.action is not None and id(self.action) in exclusive:
            chosen.add(id(exclusive[id(self.action)]))
        options: list[str] = []
        positionals: list[str] = []
        for action in value_actions(leaf):
            if action is self.omit:
                continue
            if action is self.action and self.value is not None:
                text = self.value(env)
            elif action.required or not action.option_strings:
                text = kind_of(action).valid(env)
            elif id(action) in exclusive and exclusive[id(action)].required \
                    and id(exclusive[id(action)]) not in chosen:
                chosen.add(id(exclusive[id(action)]))
                text = kind_of(action).valid(env)
            else:
                continue
            if action.option_strings:
                options += [action.option_strings[0], text]
            else:
                positionals.append(text)
        root: list[str] = []
        if not self.path:  # an option of the root parser: run it with a harmless command
            root, options, tail = options, [], ["storage", "random-uuid"]
        else:
            tail = list(self.path)
        return [*root, *tail, *options, *self.extra, *positionals]


def leaf_parser(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse.ArgumentParser:
    for name in path:
        parser = _subparsers(parser)[0].choices[name]
    return parser


PARSER = build_parser()

#: Options a command accepts but, as in Kafka, never reads: kafka-features' connection flags on its
#: offline look-ups; and `cluster status`' client config, which only reaches running nodes (the walk's
#: cluster is stopped, and a properties file of unknown keys is a warning, as Kafka's admin client
#: says "supplied but not used"). Only the wrong values the parser refuses are walked for them.
UNREAD = {(("features", "version-mapping"), "--command-config"),
          (("features", "feature-dependencies"), "--command-config"),
          (("cluster", "status"), "--command-config")}


def generate() -> list[Case]:
    cases: list[Case] = []
    for path, sub in commands(PARSER):
        name = " ".join(path) or "kraftwerk"
        if _subparsers(sub):
            cases.append(Case(path, None, None, True, f"{name} <unknown command>",
                              extra=("no-such-command",)))
        if not (is_leaf(sub) or not path):
            continue
        if path:
            cases.append(Case(path, None, None, True, f"{name} --no-such-option",
                              extra=("--no-such-option",)))
        for action in value_actions(sub):
            flag = action.option_strings[0] if action.option_strings else action.metavar or action.dest
            if action.required:
                cases.append(Case(path, None, None, True, f"{name} without {flag}", omit=action))
            kind = kind_of(action)
            for i, value in enumerate(kind.refused_by_parser):
                cases.append(Case(path, action, value, True, f"{name} {flag} wrong#{i}"))
            if (path, flag) in UNREAD:
                continue
            for i, value in enumerate(kind.refused_by_command):
                # each wrong content also with every switch of the command (they change the code path)
                for switch in ((), *((a.option_strings[0],) for a in switches(sub))):
                    label = f"{name} {flag} refused#{i}" + "".join(f" {s}" for s in switch)
                    cases.append(Case(path, action, value, False, label, extra=switch))
    return cases


CASES = generate()


@pytest.fixture(scope="module")
def refused_address() -> Iterator[str]:
    """A loopback port that refuses connections at once (bound, never listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


LOG_LINE = re.compile(r"^\[[^\]]+\] (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_wrong_input_is_one_line_and_a_non_zero_exit(case: Case, tmp_path: Path,
                                                     refused_address: str) -> None:
    env = Env(tmp_path, refused_address)
    argv = case.argv(env, PARSER)
    try:
        code, _, err = run_in_process(argv)
    finally:
        _stop_anything_started(tmp_path)
    assert "Traceback" not in err, f"kraftwerk {' '.join(argv)}\n{err}"
    lines = err.strip().splitlines()
    assert lines, f"kraftwerk {' '.join(argv)} printed no error (exit {code})"
    if case.by_parser:
        assert code == 2, f"kraftwerk {' '.join(argv)} exited {code}: {err}"
        assert len(lines) == 1, f"kraftwerk {' '.join(argv)}:\n{err}"
        assert "error:" in lines[0]
        if case.action is not None:
            assert "argument" in lines[0], lines[0]
    else:
        assert code not in (0, None), f"kraftwerk {' '.join(argv)} succeeded: {err}"
        assert all(LOG_LINE.match(line) for line in lines[:-1]), f"kraftwerk {' '.join(argv)}:\n{err}"
        assert not LOG_LINE.match(lines[-1]), f"kraftwerk {' '.join(argv)}: no one-line error:\n{err}"


def _stop_anything_started(root: Path) -> None:
    """A wrong value a command failed to refuse must not leave node processes behind."""
    for state in root.rglob("cluster.json"):
        with contextlib.suppress(Exception):
            if any(n.get("pid") for n in json.loads(state.read_text()).get("nodes", [])):
                main(["cluster", "down", "--dir", str(state.parent), "--grace", "1"])


def test_every_value_option_has_a_kind_the_walk_knows() -> None:
    for _, sub in commands(PARSER):
        for action in value_actions(sub):
            kind_of(action)
    assert len(CASES) > 100


# --------------------------------------------------------------------------------- real processes


def _kraftwerk(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftwerk.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.parametrize("argv", [
    ("--log-level", "bogus", "cluster", "status", "--dir", "."),
    ("bogus",),
    ("storage", "format", "--config", "/nonexistent/server.properties", "-t", "abc"),
])
def test_wrong_input_through_a_real_process(argv: tuple[str, ...]) -> None:
    done = _kraftwerk(*argv)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_node_entry_point_refuses_a_missing_config_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "kraftwerk.cli.server_cmd", "start", "--config",
                           str(tmp_path / "missing.properties")], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith(f"{tmp_path / 'missing.properties'}: No such file or directory "
                                        "(see --help)")
