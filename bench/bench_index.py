"""The first index of N HTTP servers: a search in a bridge whose index is empty lists them all."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bridge.models import SearchResult
from bridge.settings import Settings
from bridge.tools import Bridge

HERE = Path(__file__).resolve().parent


def first_index(count: int, folder: Path) -> str:
    proc = subprocess.Popen([sys.executable, str(HERE / "many_servers.py"), str(count)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        servers = {f"s{i}": {"transport": "http", "url": f"http://127.0.0.1:{port}/s{i}/mcp"} for i in range(count)}
        folder.mkdir(parents=True)
        settings = Settings(workspace=folder, state_dir=folder / "state", homes_dir=folder / "homes", search_wait_s=600)
        bridge = Bridge(settings, servers, caller="cli")
        try:
            started = time.perf_counter()
            first = bridge.list_tools(query="read the text of a file")
            indexing = time.perf_counter() - started
            started = time.perf_counter()
            bridge.list_tools(query="create a new branch")
            after = time.perf_counter() - started
        finally:
            bridge.close()
        restarted = Bridge(settings, servers, caller="cli")  # a new bridge on the same index: nothing to list
        try:
            started = time.perf_counter()
            restarted.list_tools(query="merge a pull request")
            cold = time.perf_counter() - started
        finally:
            restarted.close()
        assert isinstance(first.data, SearchResult), first.text
        searched, missed = len(first.data.servers_searched), first.data.servers_not_indexed
        assert not missed, missed
        return (
            f"first index of {searched} HTTP servers ({searched * 36} tools), by the first search: {indexing:.2f} s; "
            f"the next search: {after * 1000:.1f} ms; the first search of a restarted bridge: {cold * 1000:.1f} ms "
            "(through the sync face, audit written)"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
