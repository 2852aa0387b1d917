"""Which implementation of the hot paths is active: compiled by default, pure under KRAFTWERK_PURE=1.

The default suite runs on the compiled twins and a second pass (scripts/test.sh) runs the compiled
modules' tests with the pure path; these tests make a silently missing extension a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kraftwerk import native

_REPORT = "import json, kraftwerk.native as n; print(json.dumps(n.implementations()))"


def _implementations(pure: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
    if pure is not None:
        env[native.PURE_ENV] = pure
    out = subprocess.run([sys.executable, "-c", _REPORT], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    result: dict[str, str] = json.loads(out.stdout)
    return result


def test_this_process_uses_what_the_environment_asks_for() -> None:
    want = "pure" if native.pure_forced() else "compiled"
    assert native.implementations() == dict.fromkeys(native.TWINS, want)


@pytest.mark.parametrize(("setting", "want"), [(None, "compiled"), ("0", "compiled"), ("1", "pure"),
                                               ("yes", "pure")])
def test_the_environment_variable_picks_the_implementation(setting: str | None, want: str) -> None:
    assert _implementations(setting) == dict.fromkeys(native.TWINS, want)


def test_a_missing_twin_falls_back_to_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    assert native.compiled("kraftwerk.records._no_such_twin") is None
    assert native.compiled(native.TWINS["kraftwerk.records.batch"]) is not None
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert native.compiled(native.TWINS["kraftwerk.records.batch"]) is None
