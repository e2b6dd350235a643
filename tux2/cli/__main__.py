"""``python -m tux2.cli``: the ``tux2`` command (how ``--workers`` starts its workers)."""
import sys

from tux2.cli import main

sys.exit(main())
