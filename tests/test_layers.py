"""The layer contract: every import in ``src/kraftwerk`` points down (or stays in its package).

Layers, lowest first; packages on one line are siblings and may not import each other. A wrong-way
import fails here, and so does importing another package's private (``_``) name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kraftwerk"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "backoff", "native"),  # modules at the top of the package: the root error, one backoff,
    # the compiled twins' loader
    ("protocol", "versions"),
    ("config", "records"),
    ("storage",),
    ("image",),
    ("raft", "migration"),  # migration: KIP-866 ZooKeeper state and translation, beside raft
    ("controller",),  # may use migration (the KIP-866 driver)
    ("broker",),  # a client of the controller's public API
    ("node", "readiness"),  # NodeHost; the fleet readiness report (image, controller.features...)
    ("runtime", "sim", "spark"),
    ("cli",),
)
"""``cli`` → (``runtime``, ``sim``, ``spark``) → (``node``, ``readiness``) → the cores → ``image``
→ ``storage`` → (``config``, ``records``) → (``protocol``, ``versions``)."""


def _rank(layers: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    return {pkg: i for i, group in enumerate(layers) for pkg in group}


def _imports(path: Path, root: Path, top: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, imported module, imported names) of every absolute or relative import in ``path``."""
    parts = path.relative_to(root).with_suffix("").parts
    package = parts[:-1]
    out: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                module = ".".join((top, *base, *([node.module] if node.module else [])))
            else:
                module = node.module or ""
            out.append((node.lineno, module, tuple(a.name for a in node.names)))
    return out


def layer_violations(root: Path, layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """Every import under ``root`` (a package directory) that breaks the contract."""
    top = root.name
    rank = _rank(layers)
    problems: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[0].removesuffix(".py") if rel.parts[0] != "__init__.py" else None
        for line, module, names in _imports(path, root, top):
            parts = module.split(".")
            if parts[0] != top or len(parts) < 2:
                continue
            target = parts[1]
            where = f"{rel}:{line} imports {module}"
            if own is None or target == own:
                continue
            if own not in rank or target not in rank:
                problems.append(f"{where}: {own if own not in rank else target} has no layer")
            elif rank[target] >= rank[own]:
                how = "a sibling" if rank[target] == rank[own] else "a higher layer"
                problems.append(f"{where}: {target} is {how} of {own}")
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private or any(p.startswith("_") and p != "__init__" for p in parts[2:]):
                problems.append(f"{where}: private name {', '.join(private) or module} of another package")
    return problems


def test_src_imports_point_down() -> None:
    assert layer_violations(SRC) == []


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    assert (packages | modules) - set(_rank(LAYERS)) == set()


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "kraftwerk"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("module", "text", "expected"),
    [
        ("sim/lifecycle.py", "from kraftwerk.cli.output import emit\n", "cli is a higher layer of sim"),
        ("spark/submit.py", "import kraftwerk.cli.main\n", "cli is a higher layer of spark"),
        ("broker/node.py", "from ..node import host\n", "node is a higher layer of broker"),
        ("raft/node.py", "from kraftwerk.controller import quorum\n", "controller is a higher layer of raft"),
        ("runtime/node.py", "from kraftwerk.sim import world\n", "sim is a sibling of runtime"),
        ("image/replay.py", "from kraftwerk.nowhere import x\n", "nowhere has no layer"),
        ("broker/node.py", "from kraftwerk.controller.quorum import _pick\n", "private name _pick"),
        ("node/host.py", "from kraftwerk.raft._roles import Leader\n", "private name kraftwerk.raft._roles"),
    ],
)
def test_a_wrong_way_import_is_caught(tmp_path: Path, module: str, text: str, expected: str) -> None:
    """The checker run over a small tree holding one deliberately wrong import."""
    fine = "from kraftwerk.protocol import codec\nfrom . import sibling_module\n"
    root = _tree(tmp_path, {"__init__.py": "", module: fine + text, "protocol/codec.py": ""})
    problems = layer_violations(root)
    assert len(problems) == 1 and expected in problems[0], problems
    (root / module).write_text(fine)
    assert layer_violations(root) == []
