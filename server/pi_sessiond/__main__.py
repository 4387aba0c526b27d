"""``python -m pi_sessiond``: the same as the ``pi-sessiond`` command."""

import sys

from pi_sessiond.cli import main

sys.exit(main())
