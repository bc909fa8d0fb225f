"""The docs site as a reader sees it: built with ``mkdocs build --strict``, served over HTTP, and opened in headless
Chromium, which runs the theme's JavaScript. The home page and one guide (how-to/tasks.md) must show the navigation
with every top-level section of mkdocs.yml's ``nav``, code highlighted by Pygments, and the page's title.

Screenshots (1280x900) of both pages go to ``$MCPGEN_SCREENSHOT_DIR`` when it is set. Without Chromium (Debian
package ``chromium``) the test is skipped with the missing-program reason, which fails a CI run (tests/conftest.py).
"""

from __future__ import annotations

import functools
import html
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.docs_site import build_site
from support.system import MISSING_PROGRAM

REPO = Path(__file__).resolve().parents[1]
BROWSER_TIMEOUT = 60  # seconds for one Chromium run
WINDOW = "1280,900"
# The pages opened: (path under the site, docs page it is built from, screenshot name).
PAGES = [("", "index.md", "home.png"), ("how-to/tasks/", "how-to/tasks.md", "how-to-tasks.png")]
# Pygments' token classes that only highlighted Python has (keywords, names of functions, strings).
HIGHLIGHTED = re.compile(r'<div class="[^"]*\bhighlight\b[^"]*">.*?<span class="(?:k|kn|kd|nf|s1|s2)">', re.DOTALL)
TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
TAB = re.compile(r'<a[^>]*class="md-tabs__link[^"]*"[^>]*>(.*?)</a>', re.DOTALL)
NAV_LINK = re.compile(r'class="md-nav__link[^"]*"[^>]*>(.*?)</(?:a|label|span)>', re.DOTALL)

pytestmark = pytest.mark.peers  # starts Chromium, a program from outside the repository


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.skip(f"{MISSING_PROGRAM} chromium (apt-get install chromium; .ci/run installs it)")
    return found


def nav_sections() -> list[str]:
    """The top-level titles of mkdocs.yml's ``nav`` (read as text: the file holds tags a safe YAML load refuses)."""
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav = re.search(r"^nav:\n((?:[ \t]+.*\n|\n)*)", text, re.MULTILINE)
    assert nav is not None, "mkdocs.yml has no nav"
    return re.findall(r"^  - ([^:\n]+):", nav.group(1), re.MULTILINE)


def page_title(docs_page: str) -> str:
    """The page's first ``# `` heading, as Material puts it in <title>."""
    for line in (REPO / "docs" / docs_page).read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"docs/{docs_page} has no # heading")


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chromium()  # skip before the build when there is no browser
    return build_site(tmp_path_factory.mktemp("site"))


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on a free loopback port (Material's JavaScript does not run from file:// URLs)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def run_chromium(directory: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            chromium(),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={directory / 'profile'}",
            f"--window-size={WINDOW}",
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(("path", "docs_page", "screenshot"), PAGES, ids=[page for _, page, _ in PAGES])
def test_a_page_renders_in_a_browser(path: str, docs_page: str, screenshot: str, served: str, tmp_path: Path) -> None:
    url = served + path
    dumped = run_chromium(tmp_path, "--dump-dom", url)
    assert dumped.returncode == 0, f"chromium --dump-dom {url} failed:\n{dumped.stderr}"
    dom = dumped.stdout

    title = TITLE.search(dom)
    assert title is not None, f"{url}: no <title>"
    expected = "mcpgen" if docs_page == "index.md" else f"{page_title(docs_page)} - mcpgen"
    assert text_of(title.group(1)) == expected

    tabs = [text_of(tab) for tab in TAB.findall(dom)]
    links = {text_of(link) for link in NAV_LINK.findall(dom)}
    for section in nav_sections():
        assert section in tabs, f"{url}: the navigation tabs {tabs} lack {section!r}"
        assert section in links, f"{url}: the navigation lacks {section!r}"
    assert HIGHLIGHTED.search(dom), f"{url}: no code block highlighted by Pygments"

    image = tmp_path / screenshot
    shot = run_chromium(tmp_path, f"--screenshot={image}", url)
    assert shot.returncode == 0, f"chromium --screenshot {url} failed:\n{shot.stderr}"
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{url}: the screenshot is not a PNG"
    if target := os.environ.get("MCPGEN_SCREENSHOT_DIR"):
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(image, Path(target) / screenshot)
