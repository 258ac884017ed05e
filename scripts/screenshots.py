"""Screenshots of committed results' reports in headless chromium, at the width a user
reads them (1,400 px): each method's claims report opens on its summary and claims
table, its claims forest plot heads its figures.

    python scripts/screenshots.py bit_dgdm ensloss hyper_attention   # into docs/screenshots/

The slow tier takes the same screenshots into test-artifacts/ (tests/slow/test_browser.py).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 1400


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("no chromium: `bash scripts/system_deps.sh --browser` installs Debian's")


def shoot(page: Path, png: Path, height: int) -> Path:
    png.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={WIDTH},{height}",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            f"--screenshot={png}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return png


def forest_page(results: Path, slug: str, folder: Path) -> Path:
    """A page holding the method's forest plot at the report's size (the report shows it
    below the claims table, further down than a screenshot reaches)."""
    forest = results / slug / "plots" / f"{slug}_claims_forest.png"
    if not forest.is_file():
        raise SystemExit(f"{forest} is missing: rerun `make paper METHODS={slug}`")
    page = folder / f"{slug}-forest.html"
    page.write_text(
        f'<!doctype html><html><body style="font-family: sans-serif; margin: 8px">'
        f"<h2>{slug}: claims against their bounds</h2>"
        f'<img src="{forest.as_uri()}" style="max-width: 100%; height: auto"></body></html>\n'
    )
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("methods", nargs="+")
    parser.add_argument("--results", type=Path, default=ROOT / "docs" / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)
    scratch = args.out / ".pages"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        for slug in args.methods:
            report = args.results / slug / "claims.html"
            if not report.is_file():
                print(f"screenshots: {report} is missing", file=sys.stderr)
                return 2
            shoot(report, args.out / f"{slug}-report.png", 1100)
            shoot(forest_page(args.results, slug, scratch), args.out / f"{slug}-forest.png", 1300)
            print(f"{slug}: {args.out / slug}-report.png, -forest.png")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
