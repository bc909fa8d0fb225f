"""`mcpgen client-from-server`: a typed Python client module generated from the tools a live MCP server lists.

Holds: generate (connect with mcpgen_runtime, list the tools, have datamodel-code-generator write the models,
render, format, write), module_render (identifiers, the models read back with `ast`, the client class),
schema_guard (the server is not trusted: every tool schema is vetted before anything acts on it).
May import: pipeline/ (formatting) and the foundation; mcpgen_runtime and datamodel_code_generator only inside
functions, so that `mcpgen --help` stays fast and the feature's extras stay optional. Never cli/.
"""
