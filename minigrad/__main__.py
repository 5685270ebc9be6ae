"""`python -m minigrad ...` is the `minigrad` command."""

import sys

from minigrad.cli import main

sys.exit(main())
