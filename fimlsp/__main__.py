import sys

from fimlsp.cli import main

sys.exit(main())
