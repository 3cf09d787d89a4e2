"""The HTML report in a real browser: headless Chromium (Debian's chromium and
chromium-driver) driven by Selenium opens it from disk, without a server, and
finds no console error, no broken image, no empty table and no dead link."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from iotbench import cli

pytestmark = pytest.mark.interop


@pytest.fixture
def browser(require_peer):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = require_peer("chromium"), require_peer("chromedriver")
    options = Options()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    yield driver
    driver.quit()


def problems_of(driver, index: Path) -> list[str]:
    """Everything wrong with the page at `index`, as a person would notice it."""
    driver.get(index.as_uri())
    found = [
        f"console: {entry['message']}"
        for entry in driver.get_log("browser")
        if entry["level"] in ("SEVERE", "ERROR")
    ]
    images = driver.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth])"
    )
    found += [f"image {src} did not load" for src, width in images if not width]
    tables = driver.execute_script(
        "return Array.from(document.querySelectorAll('table'))"
        ".map(t => t.querySelectorAll('tbody tr').length)"
    )
    found += [f"table {i} has no rows" for i, rows in enumerate(tables) if rows == 0]
    links = driver.execute_script(
        "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"
    )
    for href in links:
        url = urlparse(href)
        if url.scheme != "file":
            found.append(f"link {href} leaves the report folder")
        elif url.fragment and Path(unquote(url.path)) == index:
            if not driver.execute_script(
                "return !!document.getElementById(arguments[0])", url.fragment
            ):
                found.append(f"link #{url.fragment} names no section")
        elif not Path(unquote(url.path)).is_file():
            found.append(f"link {href} names no file")
    return found


def test_the_reproduce_report_opens_cleanly(browser, tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["reproduce", "--quick", "--study", "S1,S5", "--out", str(out), "--jobs", "2", "--pcap"]
    assert cli.main(argv) == 0
    index = out / "report" / "index.html"
    assert problems_of(browser, index) == []
    # What it holds: every scenario, its figures, seeds, pcaps and the database.
    text = browser.find_element("tag name", "body").text
    for expected in ("s1-object-download", "s5-ndn-rtt", "base seed", "Python", "duckdb"):
        assert expected in text
    assert len(browser.find_elements("tag name", "img")) >= 2
    hrefs = [a.get_attribute("href") for a in browser.find_elements("tag name", "a")]
    assert sum(h.endswith(".pcap") for h in hrefs) == 36 + 6
    assert any(h.endswith("/results.duckdb") for h in hrefs)
    # Published vs ours first: a summary line per study, linking to its table, each
    # figure with a verdict, the table above the study's scenarios.
    summary = browser.find_elements("css selector", "ul.published-summary li")
    assert [li.text.split(":")[0] for li in summary] == ["S1", "S5"]
    assert all(" figures agree" in li.text for li in summary)
    for study, figures in (("S1", 18), ("S5", 5)):
        rows = browser.find_elements("css selector", f"#published-{study} tbody tr")
        assert len(rows) == figures
        verdicts = {row.find_elements("tag name", "td")[5].text for row in rows}
        assert verdicts <= {"agrees", "differs", "not run"} and "agrees" in verdicts
    html = index.read_text(encoding="utf-8")
    assert html.index('id="published-S1-section"') < html.index('id="s1-object-download"')


def test_the_checks_see_what_is_broken(browser, tmp_path: Path) -> None:
    page = tmp_path / "index.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="missing.png"><table><tbody></tbody></table>'
        '<a href="gone.pcap">x</a><a href="#nowhere">y</a>'
        "<script>console.error('broken')</script></body></html>",
        encoding="utf-8",
    )
    found = problems_of(browser, page)
    assert any(p.startswith("console:") for p in found)
    assert "image missing.png did not load" in found
    assert "table 0 has no rows" in found
    assert any("gone.pcap names no file" in p for p in found)
    assert "link #nowhere names no section" in found
