"""mcpgen: generate Python bindings for the Model Context Protocol from its official JSON Schema.

The map (one line per folder; each folder's __init__ says what it holds and may import):

    mcpgen/                  the foundation: ir (the IR, frozen dataclasses), errors (SpecError), naming
                             (identifier rules), json_input (the one bounded JSON loader), __version__ (here)
    mcpgen/pipeline/         the bindings, one module per stage in order: spec_loader (+ patches) -> parser ->
                             protocol -> build (a version's IR) -> ir_diff (CHANGES.md) -> version_facts
                             (+ spec/overlay: protocol_facts.py) -> views -> render ->
                             formatting -> output; generate.py runs them all
    mcpgen/features/         what is built on the IR and the pipeline: targets (`mcpgen render`), scaffold
                             (+ scaffold_wheels, `mcpgen new`), spec_fetch (`mcpgen spec fetch`)
    mcpgen/features/client_from_server/
                             `mcpgen client-from-server`: generate (connect, list, model, render, write),
                             module_render (the client class), schema_guard (vets what the server sends)
    mcpgen/cli/              the click commands: the group `main` (the console script) with generate, ir and
                             versions in __init__.py; one module per other command (new, diff, render, spec,
                             client_from_server)

The import rule: foundation < pipeline < features < cli. A module imports what is below it, never what is above
it or beside it at the same level, and there are no import cycles, counting `if TYPE_CHECKING:` and
function-level imports too. Only features/client_from_server imports the runtime (mcpgen_runtime, when a client
connects); the pipeline and the foundation never touch the network. tests/test_layers.py checks all of this.

Where the cut is less obvious:
- ir_diff sits in pipeline/, not features/: `generate` writes its output (mcp_bindings/CHANGES.md), so it is a
  stage of the bindings; `mcpgen diff` (cli/diff.py) prints the same diff.
- spec_fetch sits in features/, not beside spec_loader: spec_loader reads spec/ (offline, stage 1 of every
  run); spec_fetch writes spec/ from the network, once in a while. Keeping it out of pipeline/ keeps the
  pipeline offline and lets `mcpgen spec fetch --regenerate` use the pipeline from above.
- This module imports nothing, so every layer may read `__version__` without a cycle.
"""

__version__ = "0.1.0"
