"""``python -m probmut``: the same as the ``probmut`` command."""

import sys

from probmut.cli.main import main

sys.exit(main())
