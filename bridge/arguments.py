"""Command-line parsing that says what was meant, for the CLI and for the bridge's own `mcp-bridge`
serve command alike (a base module, so both layers use the one parser)."""

from __future__ import annotations

import argparse
import difflib


class Parser(argparse.ArgumentParser):
    """argparse that names the choice meant (`servrs`: did you mean 'servers'?), as Python 3.14's
    `suggest_on_error` does; subcommands' parsers are of the same class."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        choices = [str(choice) for choice in action.choices or ()]
        if choices and value not in (action.choices or ()):
            close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
            if close:
                listed = ", ".join(repr(choice) for choice in choices)
                raise argparse.ArgumentError(action, f"invalid choice: {value!r}; did you mean {close[0]!r}? (choose from {listed})")
        super()._check_value(action, value)
