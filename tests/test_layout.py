"""The package's shape holds: data flows host -> tools -> store -> downstream -> sandbox, and no
module imports against that flow; the launcher's `config.py` stays data."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Higher layers may import lower ones, never the reverse. The base modules (settings, errors,
# models, the FastMCP/SDK adapter, wording) sit under every layer but the sandbox, a leaf.
LAYERS = {"cli": 6, "host": 5, "tools": 4, "store": 3, "downstream": 2}
BASE = 1
SANDBOX = 0


def layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] == "sandbox":
        return SANDBOX
    if parts[0] != "bridge":
        return None
    return LAYERS.get(parts[1], BASE) if len(parts) > 1 else BASE


def imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def modules(package: str) -> list[tuple[str, Path]]:
    return [
        (".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"), path)
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


@pytest.mark.parametrize(("module", "path"), modules("bridge") + modules("sandbox"), ids=lambda value: str(value))
def test_no_module_imports_against_the_data_flow(module: str, path: Path) -> None:
    own = layer(module)
    assert own is not None
    upward = []
    for name in imports(path):
        if name.split(".")[0] in ("config", "server"):
            upward.append(f"{name} (the launcher's top level)")
        target = layer(name)
        if target is not None and target > own and not name.startswith(module):
            upward.append(name)
    assert upward == [], f"{module} imports upward: {upward}"


def test_the_layer_table_knows_every_subpackage() -> None:
    packages = {path.name for path in (ROOT / "bridge").iterdir() if (path / "__init__.py").is_file()}
    assert packages == set(LAYERS)


def test_config_py_is_data_and_imports_nothing_of_the_bridge() -> None:
    names = imports(ROOT / "config.py")
    assert [name for name in names if layer(name) is not None] == []
    assert set(names) <= {"__future__", "__future__.annotations", "typing", "typing.Any"}


def test_server_py_is_a_short_launcher() -> None:
    code = [line for line in (ROOT / "server.py").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) <= 10
