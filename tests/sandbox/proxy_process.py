"""A filtering proxy in a process of its own, standing in for one bridge's (tests only).

    python proxy_process.py PROXY_DIR PORT NAME [OPEN_FILES]

Serves the list (NAME,) on its route in PROXY_DIR, with NAME resolved to 127.0.0.1 and only PORT
proxied (nothing but loopback is dialled), prints the route's socket path once it listens, and
stops as the bridge does (its sockets removed) when stdin closes. OPEN_FILES lowers its open-files
limit, to run it out of descriptors for real.
"""

import resource
import sys
from pathlib import Path

import anyio
import anyio.to_thread

from sandbox import FilteringProxy
from sandbox.proxy import route_for


async def loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


async def main(proxy_dir: Path, port: int, name: str) -> None:
    proxy = FilteringProxy(resolve=loopback, public=lambda address: True, ports=(port,))
    route = route_for(proxy_dir, (name,))
    async with anyio.create_task_group() as tg:
        await tg.start(proxy.serve)
        await proxy.listen(route)
        print(route.socket, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    if len(sys.argv) > 4:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[4]), hard))
    anyio.run(main, Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
