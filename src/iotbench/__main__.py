"""`python -m iotbench` is the `iotbench` command."""

import sys

from iotbench.cli import main

sys.exit(main())
