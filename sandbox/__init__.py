"""The one way a stdio child is launched: `prepare_launch` turns argv into a sandboxed argv.

Layout: `policy` (data: what a child may do), `bubblewrap` and `seatbelt` (pure renderers of a
policy into argv), `environment` (the scrubbed child environment), `probe` (which backend works
here), `command` (how a command becomes the absolute program to run), `launch` (the impure
part; the bridge spawns the returned `Launch` itself, then lets it go through its `gate`, which
sets the limits while bwrap waits), `leftovers` (a root bridge's pids cgroups, and the sweep at
start of what bridges that died left). Around them: `programs` (a command's interpreter chain and
`check_runnable`), `repos` (git dirs in writable roots), `homes` (private homes), `placeholders`
(the per-bridge ledger of placeholders made on disk, swept once their bridge died), `network` and
`proxy` (registry-only or listed hosts through a filtering proxy; `forwarder` relays inside the
sandbox), `seccomp`, `limits` (with `limits_guard`, the script that bounds a macOS child), and
`denials` (what a failure caused by the sandbox was).
"""

from sandbox.command import CommandNotFound, resolve_command
from sandbox.denials import explain_exit, explain_network, explain_path
from sandbox.errors import InvalidWorkspace, NotRunnable, SandboxUnavailable
from sandbox.gate import Gate, GateFailed
from sandbox.homes import home_path, remove_home
from sandbox.launch import (
    Launch,
    Plan,
    SandboxConfig,
    check_runnable,
    finish_launch,
    new_repositories,
    plan_launch,
    prepare_launch,
    probe,
)
from sandbox.leftovers import sweep_leftovers
from sandbox.limits import Limits
from sandbox.proxy import FilteringProxy, ProxyRoute

__all__ = [
    "CommandNotFound", "FilteringProxy", "Gate", "GateFailed", "InvalidWorkspace", "Launch", "Limits", "NotRunnable",
    "Plan", "ProxyRoute", "SandboxConfig", "SandboxUnavailable", "check_runnable", "explain_exit",
    "explain_network", "explain_path", "finish_launch", "home_path", "new_repositories",
    "plan_launch", "prepare_launch", "probe", "remove_home", "resolve_command", "sweep_leftovers",
]  # fmt: skip
