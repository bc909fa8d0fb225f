"""`python -m mcpgen.cli`, as the nox sessions run it: the same group as the `mcpgen` console script."""

from . import main

main()
