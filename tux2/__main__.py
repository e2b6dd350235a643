"""``python -m tux2``: the ``tux2`` command, for an environment whose scripts are not on PATH
(a notebook's ``!python -m tux2 run mf``, as ``python -m pip``)."""
import sys

from tux2.cli import main

if __name__ == "__main__":          # (imported, as a walk over the package's modules does: nothing runs)
    sys.exit(main())
