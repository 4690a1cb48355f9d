"""python -m sampleaudit.generate: the generate command on its own."""

import sys

from .cli import main

sys.exit(main())
