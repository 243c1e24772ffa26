"""Check the built docs site as a user sees it: every page renders, no link or image is broken,
search finds pages; optionally screenshot three pages.

Two layers:

- :func:`static_problems` reads the built HTML (no browser): every internal link points at a file
  of the site and, with a ``#fragment``, at an id on that page; every image file exists.
- :func:`browser_problems` serves the site over HTTP (search needs it: the theme fetches its
  index) and opens every page in headless Chromium through playwright (Debian's chromium, as the
  review page's test does): the page loads with status 200, has a title and an ``h1``, logs no
  console error, every image decodes (``naturalWidth > 0``); then it types a word into the search
  box and expects results.

``python scripts/check_docs_site.py SITE [--screenshots DIR]`` prints each problem on one line and
exits 1 if there is any (CI runs it on ``mkdocs build``'s output).
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import http.server
import json
import posixpath
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: the pages screenshotted for review (path under the site, file name)
SCREENSHOTS = (
    ("quickstart/", "site-quickstart.png"),
    ("reference/cli/finetune/", "site-reference-finetune.png"),
    ("results/finetune/", "site-results-finetune.png"),
)
#: a word every build's search must find, and a page it must list
SEARCH = ("LiNeS", "guides/train/")
SEARCH_INDEX = "**/search/search_index.json"
JSON = "application/json"
#: how long one page may take to load (a loaded 2-core machine renders the longest in ~1 min)
TIMEOUT_MS = 180_000


class _Page(HTMLParser):
    """The links, images and ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.links.append(str(values["href"]))
        if tag == "img" and values.get("src"):
            self.images.append(str(values["src"]))


def pages(site: Path) -> list[Path]:
    """Every HTML page of the site (the 404 page excluded)."""
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


def browsed(site: Path, only: tuple[str, ...]) -> list[Path]:
    """The pages the browser opens: all, or those whose path matches a glob of ``only``."""
    return [
        path
        for path in pages(site)
        if not only or any(fnmatch.fnmatchcase(path.relative_to(site).as_posix(), g) for g in only)
    ]


@functools.cache
def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _target(site: Path, page: Path, href: str) -> tuple[Path, str] | None:
    """The file and fragment an internal ``href`` of ``page`` names (None: external)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
        return None
    if not parts.path:
        return page, unquote(parts.fragment)
    base = page.parent.relative_to(site).as_posix()
    joined = posixpath.normpath(posixpath.join(base, unquote(parts.path)))
    target = site / joined
    if parts.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


def static_problems(site: Path) -> list[str]:
    """Broken internal links, missing anchors and missing images, one line each."""
    problems = []
    for page in pages(site):
        where = page.relative_to(site).as_posix()
        parsed = _parse(page)
        for href in parsed.links:
            found = _target(site, page, href)
            if found is None:
                continue
            target, fragment = found
            if not target.resolve().is_relative_to(site.resolve()) or not target.is_file():
                problems.append(f"{where}: broken link {href}")
            elif fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
                problems.append(f"{where}: link {href}: no #{fragment} on that page")
        for src in parsed.images:
            found = _target(site, page, src)
            if found is not None and not found[0].is_file():
                problems.append(f"{where}: missing image {src}")
    return problems


@contextmanager
def serve(site: Path) -> Iterator[str]:
    """The site on an HTTP server on a free local port, for the duration: its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def chromium() -> str | None:
    """Debian's chromium (or another on PATH), as the review page's test uses it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_problems(
    site: Path,
    executable: str,
    screenshots: Path | None = None,
    only: tuple[str, ...] = (),
) -> list[str]:
    """Every page in headless Chromium (those matching a glob of ``only``, when given: a loaded
    machine takes up to a minute per page); the search box; the screenshots (when asked)."""
    from playwright.sync_api import sync_playwright

    problems = []
    with serve(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        # each page's search worker would index the whole site again: while the pages are
        # opened it gets an empty index of the same configuration (search is checked below)
        index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
        empty = json.dumps({"config": index["config"], "docs": []})
        page.route(SEARCH_INDEX, lambda route: route.fulfill(body=empty, content_type=JSON))
        for path in browsed(site, only):
            url = path.relative_to(site).as_posix().removesuffix("index.html")
            errors.clear()
            response = page.goto(base + url, wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{url}: status {None if response is None else response.status}")
                continue
            if not page.title() or page.locator("article h1").count() == 0:
                problems.append(f"{url}: no title or no h1: the page did not render")
            broken = page.eval_on_selector_all(
                "article img", "imgs => imgs.filter(i => !i.naturalWidth).map(i => i.src)"
            )
            problems += [f"{url}: image did not load: {src}" for src in broken]
            problems += [f"{url}: console error: {e}" for e in errors]
        word, expected = SEARCH
        page.close()
        page = browser.new_page(viewport={"width": 1280, "height": 900})  # the real index
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(base, wait_until="load")
        page.locator("input.md-search__input").click()
        page.keyboard.type(word)  # key by key, as a user types: the theme searches on keyup
        results = page.locator(".md-search-result__item")
        try:
            results.first.wait_for()
        except Exception:  # playwright's TimeoutError
            problems.append(f"search {word!r}: no results")
        else:
            links = [str(h) for h in results.locator("a").evaluate_all("a => a.map(x => x.href)")]
            if not any(expected in href for href in links):
                problems.append(f"search {word!r}: {expected} not among {len(links)} results")
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            for url, name in SCREENSHOTS:
                page.goto(base + url, wait_until="load")
                temporary = screenshots / f".{name}.tmp.png"
                page.screenshot(path=str(temporary), full_page=False)
                temporary.replace(screenshots / name)
        browser.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built site (mkdocs build --site-dir)")
    parser.add_argument("--screenshots", type=Path, default=None, help="write them here")
    parser.add_argument(
        "--static-only", action="store_true", help="no browser: links, anchors and images only"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="open only the pages whose path matches GLOB in the browser (repeatable; * spans /)",
    )
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        parser.error(f"{args.site}: no index.html; build the site first (mkdocs build)")
    problems = static_problems(args.site)
    if not args.static_only:
        executable = chromium()
        if executable is None:
            parser.error("no chromium on PATH: apt-get install chromium, or pass --static-only")
        problems += browser_problems(args.site, executable, args.screenshots, tuple(args.only))
    for problem in problems:
        print(problem, file=sys.stderr)
    opened = 0 if args.static_only else len(browsed(args.site, tuple(args.only)))
    print(
        f"{len(pages(args.site))} pages checked for links and images, {opened} opened in the "
        f"browser; {len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
