"""``python -m calendar_service``: the command line (see ``calendar_service.cli``)."""
import sys

from calendar_service.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
