"""Which network a child gets: the setting, package launchers, and the registries they may reach.

A server's own setting wins. Without one, a server started through a package launcher (`npx`,
`uvx`, `pipx run`, `bunx`, `pnpm dlx`, ...) gets `registry`: the npm and PyPI hosts this machine's
own clients are configured for, read cheaply from the environment and config files (never by
running `npm config get`, which costs a node start). Everything else gets the configured default.
Only the installed launcher counts (`launch._installed_launcher`): any script can be named `npx`.
"""

from __future__ import annotations

import configparser
import functools
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

NetworkSetting = Literal["deny", "allow", "registry"] | tuple[str, ...]

NPM_DEFAULT = ("registry.npmjs.org",)
PYPI_DEFAULT = ("pypi.org", "files.pythonhosted.org")
LAUNCHERS = frozenset({"npx", "uvx", "bunx", "pnpx"})
LAUNCHER_SUBCOMMANDS = {"pipx": ("run",), "pnpm": ("dlx",), "yarn": ("dlx",), "bun": ("x",), "npm": ("exec", "x")}
HOST = re.compile(r"^(\*\.)?([a-z0-9-]+\.)*[a-z0-9-]+$")


def is_package_launcher(executable: str, args: Sequence[str]) -> bool:
    """True for a resolved command that downloads and runs a package (`uv tool run` too)."""
    name = os.path.basename(executable)
    if name in LAUNCHERS:
        return True
    if name == "uv":
        return list(args[:2]) == ["tool", "run"]
    return bool(args) and args[0] in LAUNCHER_SUBCOMMANDS.get(name, ())


def effective_network(
    server: NetworkSetting | None, default: NetworkSetting, *, launcher: bool
) -> NetworkSetting:
    """The server's own setting, else `registry` for a launcher when the default denies."""
    if server is not None:
        return server
    return "registry" if launcher and default == "deny" else default


def normalize_hosts(hosts: Sequence[str]) -> tuple[str, ...]:
    """Lower-cased host names (`*.example.com` for a domain and its subdomains); raises on others."""
    clean = []
    for raw in hosts:
        host = raw.strip().lower().rstrip(".")
        if not HOST.match(host) or host.replace(".", "").isdigit():
            raise ValueError(f"network host {raw!r} is not a host name (IP addresses are not accepted)")
        clean.append(host)
    return tuple(sorted(set(clean)))


def registry_hosts(environ: Mapping[str, str], home: Path) -> tuple[str, ...]:
    """The npm and PyPI hosts the machine's clients use, always with the public ones.

    The public ones stay even beside a configured mirror: extra indexes and scoped registries
    add to them, and a mirror that replaces them is still better served by one list than a guess.
    """
    return _registry_hosts(tuple(sorted(environ.items())), home)


@functools.cache
def _registry_hosts(environ: tuple[tuple[str, str], ...], home: Path) -> tuple[str, ...]:
    env = dict(environ)
    return normalize_hosts([*_npm_hosts(env, home), *_python_hosts(env, home)])


def _npm_hosts(env: dict[str, str], home: Path) -> list[str]:
    urls = [v for k, v in env.items() if k.lower() == "npm_config_registry"]
    for rc in (home / ".npmrc", Path(env.get("NPM_CONFIG_GLOBALCONFIG", "/etc/npmrc")), Path("/usr/etc/npmrc")):
        urls += [value for key, value in _ini_pairs(rc) if key == "registry" or key.endswith(":registry")]
    return _hosts(urls) + list(NPM_DEFAULT)


def _python_hosts(env: dict[str, str], home: Path) -> list[str]:
    urls: list[str] = []
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX"):
        urls += env.get(name, "").split()
    for conf in (Path("/etc/pip.conf"), home / ".pip" / "pip.conf", home / ".config" / "pip" / "pip.conf"):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(conf)
        except configparser.Error:
            continue
        for section in parser.sections():
            for key in ("index-url", "extra-index-url"):
                urls += parser.get(section, key, fallback="").split()
    urls += _uv_toml_urls(home / ".config" / "uv" / "uv.toml")
    return _hosts(urls) + list(PYPI_DEFAULT)


def _uv_toml_urls(path: Path) -> list[str]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return []
    urls = [data.get("index-url", "")] + list(data.get("extra-index-url", []))
    urls += [entry.get("url", "") for entry in data.get("index", []) if isinstance(entry, dict)]
    return [u for u in urls if isinstance(u, str)]


def _ini_pairs(path: Path) -> list[tuple[str, str]]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    pairs = []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith((";", "#")):
            pairs.append((key.strip(), value.strip().strip("\"'")))
    return pairs


def _hosts(urls: list[str]) -> list[str]:
    """Host names of http(s) URLs; file:// indexes and IP literals reach nothing and are left out."""
    hosts = []
    for url in urls:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme in ("http", "https") and host and HOST.match(host) and not host.replace(".", "").isdigit():
            hosts.append(host)
    return hosts
