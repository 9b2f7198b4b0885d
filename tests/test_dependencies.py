"""What the package imports is what it declares, each at the minor version it was tested with.

A module used but only pulled in by another dependency (starlette through FastMCP) changes under
the bridge when that dependency does; a bare `>=` lets an install meet a release nobody tested.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REQUIREMENT = re.compile(r"^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*~=\s*(\d+)\.(\d+)\.(\d+)$")


def name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def requirement(line: str) -> re.Match[str] | None:
    return REQUIREMENT.match(line.split("#")[0].strip())


def third_party_modules() -> set[str]:
    """Top-level modules the package imports that are neither its own nor the standard library's."""
    found: set[str] = set()
    for path in [*ROOT.glob("bridge/**/*.py"), *ROOT.glob("sandbox/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"bridge", "sandbox", "__future__"}


def declared() -> set[str]:
    """The declared distributions and what each pins exactly (fastmcp ships its code as fastmcp-slim)."""
    names = set()
    for line in PYPROJECT["project"]["dependencies"]:
        match = requirement(line)
        assert match, line
        names.add(name(match.group(1)))
        for required in importlib.metadata.requires(match.group(1)) or []:
            if (exact := re.match(r"^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==[^;]*$", required)) is not None:
                names.add(name(exact.group(1)))
    return names


def test_every_module_the_package_imports_comes_from_a_declared_dependency() -> None:
    providers = importlib.metadata.packages_distributions()
    have = declared()
    undeclared = {
        module: providers.get(module, [])
        for module in third_party_modules()
        if not {name(dist) for dist in providers.get(module, [])} & have
    }
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_every_requirement_is_pinned_to_the_minor_version_installed_here() -> None:
    lines = PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["test"]
    for line in lines:
        match = requirement(line)
        assert match, f"{line!r} is not pinned to a minor version (~=X.Y.Z)"
        distribution, major, minor, patch = match.groups()
        installed = importlib.metadata.version(distribution)
        numbers = tuple(int(part) for part in re.findall(r"\d+", installed)[:3])
        assert numbers[:2] == (int(major), int(minor)), f"{distribution} {installed} is not the pinned {line!r}"
        assert numbers >= (int(major), int(minor), int(patch)), f"{distribution} {installed} is older than {line!r}"
