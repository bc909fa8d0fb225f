"""mkdocs hook (mkdocs.yml `hooks:`): fills in the generated parts of the reference pages at build time.

A page holds a marker line such as `<!-- mcpgen:settings -->`; reference_pages.py (beside this file) says which
markers exist and reads their content from the code, so the pages cannot drift from it. markdown_lists.py lets a
list follow a paragraph line without a blank line (as the runtime's docstrings write them), on the pages and in the
docstrings alike.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import markdown_lists
import reference_pages
from mkdocs.plugins import event_priority


@event_priority(100)  # before mkdocstrings' on_config, which copies the extensions for the docstrings
def on_config(config: Any) -> Any:
    config.markdown_extensions.append(markdown_lists.ListSpacing())
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if "<!-- mcpgen:" not in markdown:
        return markdown
    return reference_pages.expand(markdown, page.file.src_uri)
