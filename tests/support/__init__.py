"""What many tests share, in one place: import from the module, e.g. ``from support.ports import free_port``.

``ports`` (a free loopback port; whether a port accepts connections yet), ``servers`` (in-process servers on
127.0.0.1 port 0 under uvicorn, run in a task group for the length of an ``async with``), ``processes``
(servers and tools in subprocesses: a child's stderr read line by line with bounded waits; an HTTP server process
waited for until its port accepts), ``content`` (what a test reads out of a result: ``text_of``), ``system``
(programs from outside the repository: the standard skip reason when one is missing, which tests/conftest.py
reports in a NOT TESTED section), ``import_graph`` (a package's import graph read with ``ast``, and the checks
tests/test_layers.py runs on it), ``one_era_servers`` (raw stdio peers that speak only 2026-07-28 or only the
handshake era, written from the schema with no mcpgen import: ``python tests/support/one_era_servers.py --era
modern|legacy``), ``task_servers`` (the server the task tests run in process or as a stdio child), ``code_blocks`` (the
Python blocks of the README and the docs: run each, check its printed comments, ``mypy --strict`` them) and
``isolated_venv`` (pinned PyPI packages, such as another MCP implementation, in a cached
venv of their own, so that they never touch the test environment's).

``tests/conftest.py`` puts ``tests/`` on ``sys.path`` (pytest's rootdir-relative ``prepend`` import mode, as for
every helper module here), so tests in every folder import ``support``. ``ports`` and ``content`` import nothing of
the runtime; ``servers`` imports its HTTP server (starlette, uvicorn).
"""
