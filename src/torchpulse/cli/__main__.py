"""`python -m torchpulse.cli`: the same as the `torchpulse` command."""

import sys

from torchpulse.cli import main

sys.exit(main())
