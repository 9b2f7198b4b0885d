"""`python -m cli`: the same as the `mcp-bridge` script."""

import sys

from bridge.cli.main import main

sys.exit(main())
