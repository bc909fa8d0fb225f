"""mcpgen: generate Python bindings for the Model Context Protocol from its official JSON Schema."""

__version__ = "0.1.0"
