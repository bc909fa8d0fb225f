"""Stage 4: let black own the layout of every generated Python file.

Pipeline position: render -> **format** -> write or check. Templates do not fight whitespace.
"""

from __future__ import annotations

import black

LINE_LENGTH = 120
_MODE = black.Mode(line_length=LINE_LENGTH, target_versions={black.TargetVersion.PY311})


class FormatError(Exception):
    """A template produced Python that does not parse: a bug in a template, not in the input."""


def format_files(files: dict[str, str]) -> dict[str, str]:
    formatted = {}
    for path, text in files.items():
        if path.endswith(".py"):
            try:
                text = black.format_str(text, mode=_MODE)
            except black.InvalidInput as error:
                raise FormatError(f"{path}: generated code does not parse: {error}") from None
        formatted[path] = text
    return formatted
