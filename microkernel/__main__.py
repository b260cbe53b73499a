"""``python -m microkernel``: the same command line as ``microkernel``."""
import sys

from .cli import main

sys.exit(main())
