"""``python -m bindkit`` is the ``bindkit`` command."""

import sys

from bindkit.cli import main

sys.exit(main())
