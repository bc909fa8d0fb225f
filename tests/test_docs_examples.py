"""Every Python block of the docs (docs/**/*.md, docs/hooks aside) runs as printed and passes ``mypy --strict``.

The conventions (tests/support/code_blocks.py says them in full): the ```python blocks of a page are written into one
fresh directory for that page, in page order. A block whose first line is ``# file: NAME.py`` is saved as NAME.py,
type-checked but not run, for later blocks to import or start (``[sys.executable, "server.py"]``); a later block of
the same name replaces it from there on. Every other block is saved as ``block_N.py`` (N its number among the
page's Python blocks, from 1) and run there in a fresh interpreter, with no stdin, within 120 s; its
``print(...)  # text`` comments must be exactly what it prints, in order.

One test per page, its id the page's path under docs/: ``pytest tests/test_docs_examples.py -k first-server``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
from support.code_blocks import Block, fenced_blocks, file_name, printed_comments, run_block, strict_mypy

DOCS = Path(__file__).resolve().parents[1] / "docs"
# Not pages: the mkdocs hooks (Python that generates pages at build time).
NOT_PAGES = ("hooks",)
# Fence languages that are Python but would not be run: the page must say ```python.
PYTHON_ALIASES = frozenset({"py", "python3", "py3"})


def docs_pages() -> list[Path]:
    """Every Markdown page of the docs, sorted by path."""
    return sorted(page for page in DOCS.rglob("*.md") if page.relative_to(DOCS).parts[0] not in NOT_PAGES)


@dataclass(frozen=True)
class PythonBlock:
    """A ```python block of a page: its number among the page's Python blocks (from 1), where it is, its code, and
    the file name it is saved as (``# file: NAME.py``; ``block_N.py`` when it is run)."""

    number: int
    line: int
    code: str
    file: str | None

    @property
    def saved_as(self) -> str:
        return self.file or f"block_{self.number}.py"

    def where(self, page: str) -> str:
        return f"{page}:{self.line} (Python block {self.number})"


def page_blocks(page: Path) -> list[PythonBlock]:
    blocks: list[Block] = [
        block for block in fenced_blocks(page.read_text(encoding="utf-8")) if block.language == "python"
    ]
    return [
        PythonBlock(number=number, line=block.line, code=block.code, file=file_name(block.code))
        for number, block in enumerate(blocks, start=1)
    ]


def page_id(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


PAGES = [page for page in docs_pages() if page_blocks(page)]


def _save(directory: Path, block: PythonBlock) -> Path:
    path = directory / block.saved_as
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block.code, encoding="utf-8")
    return path


def test_the_docs_have_python_blocks() -> None:
    assert PAGES, "no ```python block in docs/**/*.md: the fence pattern or the docs moved"


@pytest.mark.parametrize("page", docs_pages(), ids=page_id)
def test_python_is_fenced_so_it_runs(page: Path) -> None:
    """A Python block fenced as ```py (or python3) would be shown but never run; a ``# file:`` name must be a
    relative ``.py`` path inside the page's directory."""
    for block in fenced_blocks(page.read_text(encoding="utf-8")):
        assert block.language not in PYTHON_ALIASES, f"{page_id(page)}:{block.line}: fence it as ```python"
        name = file_name(block.code) if block.language == "python" else None
        if name is not None:
            path = PurePosixPath(name)
            assert (
                path.suffix == ".py" and not path.is_absolute() and ".." not in path.parts
            ), f"{page_id(page)}:{block.line}: `# file: {name}` must be a relative NAME.py"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_python_block_of_a_page_runs(page: Path, tmp_path: Path) -> None:
    name = page_id(page)
    for block in page_blocks(page):
        path = _save(tmp_path, block)
        if block.file is not None:
            continue
        done = run_block(path)
        where = block.where(name)
        assert done.returncode == 0, f"{where} failed:\n{done.stdout}\n{done.stderr}"
        expected = printed_comments(block.code)
        assert done.stdout.splitlines() == expected, (
            f"{where}: its `print(...)  # text` comments are not what it prints\n"
            f"comments: {expected}\nprinted:  {done.stdout.splitlines()}\nstderr:\n{done.stderr}"
        )


def _snapshots(blocks: list[PythonBlock]) -> list[list[PythonBlock]]:
    """The page's blocks in groups mypy can check together: a new group starts where a file is written again, so every
    version of a file is checked with the blocks that come after it."""
    groups: list[list[PythonBlock]] = []
    current: dict[str, PythonBlock] = {}
    runs: list[PythonBlock] = []
    for block in blocks:
        if block.file is not None and block.file in current:
            groups.append([*current.values(), *runs])
            runs = []
        if block.file is not None:
            current[block.file] = block
        else:
            runs.append(block)
    groups.append([*current.values(), *runs])
    return groups


GENERATES_MODULE = "client-from-server"


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for every page's run: the runtime and the bindings are checked once."""
    return tmp_path_factory.mktemp("docs-mypy-cache")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_python_block_of_a_page_type_checks_strictly(page: Path, tmp_path: Path, mypy_cache: Path) -> None:
    blocks = page_blocks(page)
    # A page whose blocks generate a module a later block imports (``mcpgen client-from-server ... --out x.py``, as
    # tests/test_readme.py does for the README) is run first, in each directory mypy checks: the module must exist.
    generates = any(GENERATES_MODULE in block.code for block in blocks if block.file is None)
    for number, group in enumerate(_snapshots(blocks), start=1):
        directory = tmp_path / f"version_{number}"
        files = [_save(directory, block) for block in group]
        if generates:
            for block, path in zip(group, files, strict=True):
                if block.file is None and GENERATES_MODULE in block.code:
                    ran = run_block(path)
                    assert ran.returncode == 0, f"{block.where(page_id(page))} failed:\n{ran.stdout}\n{ran.stderr}"
        done = strict_mypy(files, directory, cache_dir=mypy_cache)
        assert done.returncode == 0, f"{page_id(page)}:\n{done.stdout}{done.stderr}"
