"""A Markdown extension: a list may start right after a paragraph line, as in CommonMark.

Python-Markdown needs a blank line before a list; the runtime's docstrings (rendered by mkdocstrings on the API
pages) write ``Some text:`` and the list on the next line, as CommonMark and GitHub allow. This preprocessor adds
the blank line, outside fenced code blocks only, so those docstrings render as lists without being rewritten.
"""

from __future__ import annotations

import re

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

ITEM = re.compile(r"^ {0,3}(?:[-*+]|1\.) +\S")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def spaced(lines: list[str]) -> list[str]:
    """``lines`` with a blank line before every list that follows a paragraph line directly."""
    out: list[str] = []
    fence: str | None = None
    in_list = False
    for line in lines:
        opening = FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
        elif opening:
            fence = opening.group(1)
        elif ITEM.match(line):
            if not in_list and out and out[-1].strip():
                out.append("")
            in_list = True
        elif not line.strip():
            in_list = False
        elif not line.startswith((" ", "\t")):
            in_list = False
        out.append(line)
    return out


class _ListSpacing(Preprocessor):  # type: ignore[misc]  # untyped base
    def run(self, lines: list[str]) -> list[str]:
        return spaced(lines)


class ListSpacing(Extension):  # type: ignore[misc]  # untyped base
    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(_ListSpacing(md), "mcpgen_list_spacing", 40)
