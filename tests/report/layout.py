"""Measures the layout of an `hrr report --format html` page in headless
Chromium (Debian's, through Playwright) at each viewport width given, saves
a full-page screenshot per width, and prints the measurements as JSON for
tests/report_cli.rs to judge.

usage: layout.py PAGE.html SHOT_DIR WIDTH...
"""

import json
import pathlib
import sys

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"

MEASURE = """() => {
  const doc = document.documentElement;
  const box = (el) => { const r = el.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width, height: r.height}; };
  const table = document.querySelector("table.groups");
  const cells = [...document.querySelectorAll("td.kernel")];
  const longest = cells.reduce((a, c) => (c.textContent.length > a.textContent.length ? c : a));
  const code = longest.querySelector("code");
  const lines = new Set([...code.getClientRects()].map((r) => Math.round(r.top)));
  return {
    scroll_width: doc.scrollWidth,
    client_width: doc.clientWidth,
    table: table ? {...box(table), visibility: getComputedStyle(table).visibility, display: getComputedStyle(table).display} : null,
    bars: [...document.querySelectorAll(".bar")].map((b) => ({count: Number(b.dataset.count), width: b.getBoundingClientRect().width})),
    kernel_cells: cells.map((c) => ({scroll_width: c.scrollWidth, client_width: c.clientWidth})),
    long_kernel: {
      text_length: code.textContent.length,
      lines: lines.size,
      cell: box(longest),
      code_right: Math.max(...[...code.getClientRects()].map((r) => r.right)),
    },
  };
}"""


def main():
    page_path, shots = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2])
    widths = [int(w) for w in sys.argv[3:]]
    shots.mkdir(parents=True, exist_ok=True)
    fetched = []
    result = {"widths": {}, "fetched": fetched}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            for width in widths:
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith("file:") else None)
                page.goto(page_path.as_uri())
                result["widths"][str(width)] = page.evaluate(MEASURE)
                page.screenshot(path=str(shots / f"report-{width}.png"), full_page=True)
                page.close()
        finally:
            browser.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
