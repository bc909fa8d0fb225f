"""What is built on the IR and the pipeline, beside the bindings: one module (or folder) per feature.

Holds: targets (`mcpgen render`: any template set against a neutral view of the IR), scaffold (+ scaffold_wheels:
`mcpgen new`, a server project that runs), spec_fetch (`mcpgen spec fetch`: download a version into spec/), and
client_from_server/ (`mcpgen client-from-server`: a typed client for a live server).
May import: pipeline/ and the foundation. Never cli/. Features do not import each other today; only
client_from_server/ may import mcpgen_runtime, and only when a client connects.
"""
