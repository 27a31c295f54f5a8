"""The docs site as a reader meets it. ``mkdocs build --strict`` once per session (a broken link
or anchor, or a page outside the nav, fails the build), then the home page and the CLI reference
rendered by headless Debian Chromium: the theme's header and navigation are in the rendered page,
the screenshot is neither blank nor unstyled (the header bar has the theme's colour, the page has
contrast), and the CLI reference has a section for every command of the click tree.

Chromium comes from Debian (``scripts/chromium-setup``, run by ``scripts/test``); without it the
screenshot tests skip with one line, except under ``CI=true``, where they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tablekeeper.cli.main import cli
from tablekeeper.cli.reference import anchor, commands

REPO = Path(__file__).resolve().parents[2]
#: Flags for a root user on a machine without a display or network (docs: the polyglot machine).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
WIDTH, HEIGHT = 1280, 900
#: Material's ``primary: indigo`` (mkdocs.yml): the header bar of a page whose theme CSS loaded.
HEADER_RGB = (0x40, 0x51, 0xB5)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"docs site test cannot run under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once per session with ``--strict``."""
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        _unavailable("mkdocs not installed (scripts/bootstrap test docs installs the docs extra)")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def _chromium(page: Path, profile: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if binary is None:
        _unavailable("chromium not installed (scripts/chromium-setup: apt-get install -y chromium)")
    assert binary is not None
    return subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
                           *mode, page.as_uri()], capture_output=True, text=True, timeout=120, check=True)


def _rendered(site: Path, name: str, tmp_path: Path) -> tuple[str, Path]:
    """The page's DOM after its scripts ran, and a screenshot of its first screen."""
    png = tmp_path / f"{Path(name).stem}.png"
    dom = _chromium(site / name, tmp_path / "profile", f"--screenshot={png}", "--dump-dom").stdout
    return dom, png


def _assert_styled_page(dom: str, png: Path) -> None:
    from PIL import Image, ImageStat

    assert 'class="md-header' in dom and 'class="md-nav' in dom, "the theme's header or navigation is missing"
    assert 'href="cli-reference.html"' in dom, "the navigation does not link the CLI reference"
    with Image.open(png) as shot:
        image = shot.convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    # the header bar: the theme's colour across the top (a page without its CSS is white there)
    bar = image.crop((0, 4, WIDTH, 44))
    pixels = list(bar.getdata())
    themed = sum(1 for p in pixels if max(abs(c - h) for c, h in zip(p, HEADER_RGB, strict=True)) <= 24)
    assert themed / len(pixels) > 0.7, f"only {themed / len(pixels):.0%} of the header bar has the theme's colour"
    # the content: text on a background, not one flat colour
    body = image.crop((280, 60, 980, HEIGHT)).convert("L")
    spread = ImageStat.Stat(body).stddev[0]
    dark = sum(1 for v in body.getdata() if v < 128)
    assert spread > 20 and dark > 2000, f"the page looks blank (grey spread {spread:.1f}, {dark} dark pixels)"


def test_home_page_renders_with_the_theme(site: Path, tmp_path: Path) -> None:
    dom, png = _rendered(site, "index.html", tmp_path)
    _assert_styled_page(dom, png)
    assert "Never lose data" in dom


def test_cli_reference_lists_every_command(site: Path, tmp_path: Path) -> None:
    dom, png = _rendered(site, "cli-reference.html", tmp_path)
    _assert_styled_page(dom, png)
    listed = [name for name, _ in commands(cli)]
    assert {"tablekeeper tag create", "tablekeeper branch fast-forward", "tablekeeper clean-orphans"} <= set(listed)
    missing = [name for name in listed if f'id="{anchor(name)}"' not in dom]
    assert not missing, f"the CLI reference has no section for {missing}"
    assert "--older-than" in dom and "snapshot.num-retained.min" in dom  # options with their help


def test_generated_pages_are_in_the_built_site(site: Path) -> None:
    """The hook filled in both generated pages (a marker left over means it did not run)."""
    options = (site / "options.html").read_text(encoding="utf-8")
    assert "partition.expiration-time" in options and "retention.partitions.expiration" in options
    for page in ("cli-reference.html", "options.html"):
        assert "generated: tablekeeper.cli.reference" not in (site / page).read_text(encoding="utf-8"), page
