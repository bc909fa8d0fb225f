"""Errors that carry a location in the input, so every message can name the file and JSON pointer.

Used by every stage; the CLI turns them into exit code 2 ("bad input") before anything is written.
"""

from __future__ import annotations

# The last-resort message when a schema makes a stage overflow Python's recursion limit. Nesting is refused
# earlier (json_input.MAX_NESTING), so what is left is a chain through definitions: A -> B -> C ... by $ref
# or allOf, thousands long. Better a clear refusal than a traceback.
TOO_DEEP_FOR_MCPGEN = (
    "the definitions refer to each other too deeply for mcpgen (Python's recursion limit was reached; "
    "a chain of thousands of $ref or allOf steps?)"
)


def escape_pointer_token(token: str) -> str:
    """RFC 6901: '~' becomes '~0' and '/' becomes '~1'."""
    return token.replace("~", "~0").replace("/", "~1")


def join_pointer(pointer: str, *tokens: str | int) -> str:
    return pointer + "".join("/" + escape_pointer_token(str(token)) for token in tokens)


class SpecError(Exception):
    """Bad input: a schema, manifest or patch that mcpgen cannot turn into bindings."""

    def __init__(self, file: str, pointer: str, message: str) -> None:
        super().__init__(f"{file}#{pointer}: {message}")
        self.file = file
        self.pointer = pointer
        self.message = message


class SpecErrors(Exception):
    """Several independent problems found in one pass, reported together."""

    def __init__(self, errors: list[SpecError]) -> None:
        super().__init__("\n".join(str(error) for error in errors))
        self.errors = errors
