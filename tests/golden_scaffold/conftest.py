"""The snapshots below are scaffolded projects, each with its own tests/test_server.py: pytest must not collect
them from the mcpgen checkout (tests/test_scaffold.py runs one scaffolded project's tests in its own directory)."""

collect_ignore_glob = ["*"]
