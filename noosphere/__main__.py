"""`python -m noosphere` runs the CLI, for environments where the console script is not on PATH."""

from noosphere.cli import main

main()
