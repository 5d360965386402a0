"""The ``torchtriage`` command installed with the package."""

import sys

from . import _native


def main() -> None:
    """Runs the command line in ``sys.argv`` and exits with its code."""
    sys.exit(_native.cli(sys.argv))


if __name__ == "__main__":
    main()
