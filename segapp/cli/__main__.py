"""``python -m segapp.cli``: the ``segapp`` command."""

import sys

from . import main

sys.exit(main())
