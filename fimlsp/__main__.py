import sys

from fimlsp.cli import main

if __name__ == "__main__":  # not when a spawned process (training's data workers) imports it
    sys.exit(main())
