"""The generated message types (``protocol/messages/``): never out of step with the declarations,
and mypy refuses a misspelt field where a plain dict would fail only at run time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parents[2]

GOOD = '''
from kraftwerk.protocol.messages.features import (
    UpdateFeaturesRequest,
    UpdateFeaturesRequestFeatureUpdateKey,
    UpdateFeaturesResponse,
)

def updates(body: UpdateFeaturesRequest) -> int:
    return len(body["featureUpdates"])

def level(u: UpdateFeaturesRequestFeatureUpdateKey) -> int:
    return u["maxVersionLevel"]

def answer() -> UpdateFeaturesResponse:
    return {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "results": []}
'''
MISSPELT = [  # (what the correct snippet says, the slip, what mypy names)
    ('u["maxVersionLevel"]', 'u["maxVersionLevl"]', '"maxVersionLevl"'),
    ('body["featureUpdates"]', 'body["FeatureUpdates"]', '"FeatureUpdates"'),
    ('"errorCode": 0', '"errorCod": 0', '"errorCod"'),
    ('"errorMessage": None', '"errorMessage": 7', '"errorMessage"'),
]


def test_the_generated_modules_match_the_declarations() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_messages.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def _mypy(tmp_path: Path, source: str) -> tuple[str, int]:
    path = tmp_path / "snippet.py"
    path.write_text(source)
    os.environ["MYPYPATH"] = str(ROOT / "src")
    out, err, code = mypy_api.run(["--strict", "--no-incremental", "--follow-imports=silent",
                                   "--cache-dir", str(tmp_path / ".mypy"), str(path)])
    return out + err, code


def test_mypy_refuses_misspelt_fields(tmp_path: Path) -> None:
    text, code = _mypy(tmp_path, GOOD)
    assert code == 0, text
    bad = GOOD
    for good, slip, _ in MISSPELT:
        assert good in bad
        bad = bad.replace(good, slip)
    text, code = _mypy(tmp_path, bad)
    assert code == 1, text
    errors = [line for line in text.splitlines() if ": error: " in line]
    for _, _, named in MISSPELT:
        assert any(named in line for line in errors), text


#: A field each typed handler reads or writes, and a slip of it: mypy must refuse the slip in the
#: handler's own source, so a handler that falls back to plain dicts fails here. (Subscripts and
#: literals only: mypy types ``.get`` of an unknown key as ``object`` instead of naming it.)
HANDLER_SLIPS = [
    ("controller/acl_control.py", 'body["creations"]', 'body["creation"]'),
    ("controller/topics.py", '"numPartitions": len(assignment)', '"numPartition": len(assignment)'),
    ("controller/configs.py", 'res["resourceType"]', 'res["resourceTyp"]'),
    ("controller/scram_control.py", 'upsertion["saltedPassword"]', 'upsertion["saltedPasword"]'),
    ("controller/partitions.py", 'p["partitionEpoch"]', 'p["partitionEpok"]'),
    ("raft/reconfig.py", 'int(e["port"])', 'int(e["prt"])'),
    ("raft/node.py", 'part["replicaEpoch"]', 'part["replicaEpoc"]'),
    ("raft/roles/leader.py", '"highWatermark": -1', '"highWatermrk": -1'),
]


def test_mypy_refuses_a_misspelt_field_in_the_typed_handlers(tmp_path: Path) -> None:
    sources = []
    for relative, good, slip in HANDLER_SLIPS:
        source = (ROOT / "src" / "kraftwerk" / relative).read_text()
        assert good in source, f"{relative} no longer says {good}"
        path = tmp_path / relative.replace("/", "_")
        path.write_text(source.replace(good, slip, 1))
        sources.append(str(path))
    os.environ["MYPYPATH"] = str(ROOT / "src")
    out, err, code = mypy_api.run(["--strict", "--follow-imports=silent", "--cache-dir",
                                   str(ROOT / ".mypy_cache"), *sources])
    assert code == 1, out + err
    for relative, _, slip in HANDLER_SLIPS:  # the cache may name an earlier run's directory: match the file
        file, name = relative.replace("/", "_"), slip.split('"')[1]
        named = [line for line in out.splitlines() if f"{file}:" in line and f'"{name}"' in line]
        assert any("TypedDict" in line and "key" in line for line in named), (relative, out)
