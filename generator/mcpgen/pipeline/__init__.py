"""The bindings pipeline: spec/ and templates/bindings/ in, the files of generated/mcp_bindings out.

Holds one module per stage, in order: spec_loader (find, verify against the manifest, apply patches) -> parser
(definitions into the IR) -> protocol (methods, directions, request -> result pairs) -> build (the three as one
call: a version's complete IR; extensions does the same for spec/extensions/, leaving out the base version's
copies) -> ir_diff (CHANGES.md, consecutive versions compared) -> version_facts (every
version's IR joined with the reviewed spec/overlay/versions.json: protocol_facts.py) -> views and stub_views
(what a Python template prints; stub_views for server.py and client.py) -> render ({path: text}) -> formatting
(black) -> output (write atomically, or --check).
generate.py runs them all; it is what the CLI, the tests and the benchmarks call.
May import: the foundation (mcpgen's ir, errors, naming, json_input, __version__) and the modules here. Never
features/, cli/, mcpgen_runtime, or anything that goes online.
"""
