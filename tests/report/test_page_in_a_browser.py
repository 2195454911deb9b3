"""The report's page in a real browser, where people read it: a laptop's width (1366 px)
and a phone's (390 px), JavaScript on and off, and the run a user actually has, an
interrupted one (a population holding only its header row).

tests/chromium.py drives Debian's headless Chromium over the DevTools protocol (nothing
downloaded). One browser and one page per data set serve the module's tests: the
interrupted synthetic run (with verdicts), DeepCrime's bundled 20-vs-20 populations
(U-shaped posteriors, infinite ratios) and, in the slow tests, the bundled MNIST data
and a tiny real training run. The checks: no JavaScript error, nothing fetched, the
score and every mutant visible, no page-level horizontal scrolling, every column of the
table visible on a laptop and its header staying in view, sorting (numbers and
magnitudes as numbers, infinite ratios as the largest) and filtering (several outcomes,
kept in the address) under real clicks and typing, every figure drawn unshrunk, a
U-shaped posterior's curve drawn high, and the page without JavaScript.

The README's screenshot (docs/figures/report_mnist.png) is rendered by
test_mnist_report_in_a_real_browser, which stores in the PNG the text the browser showed
in it and fails when the page now shows other text (pixels are not compared: fonts differ
between machines). To redraw it after an intended change::

    PROBMUT_UPDATE_SCREENSHOT=1 python -m pytest -n 0 \\
        tests/report/test_page_in_a_browser.py -k mnist_report
"""

import difflib
import io
import json
import os
import re
import shlex
from pathlib import Path

import pytest

from probmut.campaign import magnitude_values
from tests import chromium

from ..conftest import CLI, RUN_SETTINGS, interrupted_run, report_json, write_settings

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "figures" / "report_mnist.png"
FAST = ("--sample", "5", "--bootstraps", "30", "--trials", "30")
LAPTOP, PHONE = (1366, 900), (390, 844)
#: The mutant table's columns (1-based, as CSS's nth-child counts them).
COLUMN = {"mutant": 1, "mean": 3, "ratio": 5}


@pytest.fixture(scope="module")
def browser():
    if chromium.executable() is None:
        if os.environ.get("PROBMUT_REQUIRE_BROWSER"):  # CI (.ci/run): never skip
            pytest.fail(chromium.MISSING)
        pytest.skip(chromium.MISSING)
    with chromium.Chromium(*LAPTOP) as page:
        yield page


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """The page of a run stopped by Ctrl-C (tests/conftest.py: interrupted_run; the
    settings its probmut train recorded beside it), and its JSON document."""
    top = tmp_path_factory.mktemp("interrupted")
    out = top / "report.html"
    run = interrupted_run(top / "run")
    write_settings(run, RUN_SETTINGS)
    return out, report_json(run, out, *FAST)


@pytest.fixture(scope="module")
def deepcrime(tmp_path_factory):
    """The page of DeepCrime's own MNIST populations (`--model mnist_dc`, 20 vs 20 with
    k = 20: kill counts 0 or N, U-shaped posteriors, infinite ratios), and its document."""
    out = tmp_path_factory.mktemp("deepcrime") / "mnist_dc.html"
    document = CLI.json("report", "--model", "mnist_dc", "--no-verdicts", "--out", out,
                        "--quiet")
    return out, document


def open_page(page: chromium.Chromium, path: Path, size=LAPTOP, fragment: str = "") -> None:
    page.resize(*size)
    page.load(path, fragment)
    assert page.errors == []


def natural(document: dict) -> list[str]:
    """The mutants' names by operator, then magnitude as a number (categories by name)."""
    keys = {}
    for mutation in dict.fromkeys(m["mutation"] for m in document["mutants"]):
        group = [m for m in document["mutants"] if m["mutation"] == mutation]
        values, _ = magnitude_values([m["magnitude"] for m in group])
        for j, m in enumerate(group):
            keys[m["name"]] = (mutation.lower(), 0.0 if values is None else values[j],
                               m["magnitude"].lower())
    return sorted(keys, key=keys.get)


VISIBLE_ROWS = ("Array.from(document.querySelectorAll('#mutant-table tbody tr'))"
                ".filter(r => r.getClientRects().length > 0)")
NAMES = f"{VISIBLE_ROWS}.map(r => r.cells[0].innerText.replace(/\\s/g, ''))"
CELLS = ("Array.from(document.querySelectorAll('#mutant-table tbody tr')).map(r =>"
         " r.cells[{}].getAttribute('data-value'))")


def check_in_browser(page: chromium.Chromium, path: Path, document: dict) -> None:
    """What a reader of the report must see, checked in the browser (module notes)."""
    open_page(page, path)
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests
    score = document["mutation_score"]
    shown = page.evaluate("(() => { const e = document.getElementById('mutation-score');"
                          " const r = e.getBoundingClientRect();"
                          " return [e.innerText, r.width > 0 && r.height > 0]; })()")
    assert shown == [f"{score['mean']:.3f}" if score else "no mutation score", True]
    names = [m["name"] for m in document["mutants"]]
    assert page.evaluate(NAMES) == names
    sections = page.evaluate(
        "Array.from(document.querySelectorAll('section.mutant')).filter(s =>"
        " s.getClientRects().length > 0).map(s => s.querySelector('h3').firstChild"
        ".textContent.trim())")
    assert sections == names
    # Sorting: real clicks on a header, up then down; blanks (not analysed) stay last.
    means = [m["posterior"]["mean"] if m["posterior"] else None for m in document["mutants"]]
    known = sorted(v for v in means if v is not None)
    blanks = [None] * means.count(None)
    for expected in (known + blanks, known[::-1] + blanks):
        page.click(f"#mutant-table th:nth-child({COLUMN['mean']}) button")
        cells = page.evaluate(CELLS.format(COLUMN["mean"] - 1))
        assert [float(c) if c else None for c in cells] == pytest.approx(expected)
    page.click(f"#mutant-table th:nth-child({COLUMN['mutant']}) button")
    assert page.evaluate(NAMES) == natural(document)
    # Filtering: type an operator's name.
    operator = document["mutants"][0]["mutation"]
    page.click("#filter")
    page.type(operator)
    rows = page.evaluate(NAMES)
    assert rows == [n for n in natural(document) if operator in n]
    assert page.evaluate("document.getElementById('shown').innerText") == (
        f"{len(rows)} of {len(names)} mutants shown")
    # Every figure drawn: decoded, and far from blank (many colours, ink on the white).
    figures = page.evaluate(
        "Array.from(document.images).map(i => { const c = document.createElement('canvas');"
        " c.width = i.naturalWidth; c.height = i.naturalHeight;"
        " if (!i.complete || !c.width) { return [0, 0]; }"
        " const g = c.getContext('2d'); g.fillStyle = '#fff'; g.fillRect(0, 0, c.width,"
        " c.height); g.drawImage(i, 0, 0);"
        " const d = g.getImageData(0, 0, c.width, c.height).data; const colours = new Set();"
        " let ink = 0; for (let k = 0; k < d.length; k += 4) {"
        " colours.add((d[k] << 16) | (d[k + 1] << 8) | d[k + 2]);"
        " if (d[k] + d[k + 1] + d[k + 2] < 600) { ink++; } }"
        " return [colours.size, ink / (d.length / 4)]; })")
    assert len(figures) == matplotlib_figures(document)
    assert all(colours > 20 and ink > 0.01 for colours, ink in figures), figures
    # each analysed mutant's figure, drawn by the page's script: every part of it there
    analysed = sum(m["posterior"] is not None for m in document["mutants"])
    drawn = page.evaluate(
        "(() => { window.probmutFigures.drawAll(); return Array.from(document.querySelectorAll("
        "'.posterior')).map(p => ['plot-area', 'resamples', 'bagged-mixture', 'beta-fit',"
        " 'interval', 'mean'].map(part => p.querySelectorAll(`[data-part=${part}]`).length)"
        ".concat([(p.querySelector('[data-part=beta-fit]') || {getAttribute: () => ''})"
        ".getAttribute('d').split('L').length])); })()")
    assert len(drawn) == analysed
    assert all(row[:6] == [1] * 6 and row[6] > 20 for row in drawn), drawn
    shot = _image(page.screenshot())
    assert shot.size == LAPTOP and len(shot.getcolors(1 << 24)) > 20


def matplotlib_figures(document: dict) -> int:
    """The figures matplotlib draws for a page: each operator's curve (with an analysed
    magnitude) and the overview's parts (one operator's, 40 mutants at most, each)."""
    from probmut.report.figures import OVERVIEW_ROWS

    operators = [m["mutation"] for m in document["mutants"]]
    return len([c for c in document["operators"] if c["magnitudes"]]) + sum(
        -(-operators.count(o) // OVERVIEW_ROWS) for o in dict.fromkeys(operators))


def _image(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


def test_an_interrupted_run_gives_its_page(browser, interrupted):
    """Ctrl-C left a population with its header only and one with no file: the page says
    unfinished, "0 of 12", and analyses the rest; the next steps name both."""
    path, document = interrupted
    check_in_browser(browser, path, document)
    status = browser.evaluate("document.getElementById('status').innerText")
    assert status.startswith("UNFINISHED: 2 population(s) short")
    assert "delete_training_data_50: 0 of 12 instances (no instance yet)" in status
    assert "neurons_freezing_0.1: 0 of 12 instances (no file yet)" in status
    steps = browser.evaluate("document.getElementById('next-steps').textContent")
    assert "delete_training_data_50" in steps and "neurons_freezing_0.1" in steps
    assert browser.evaluate("document.querySelector('#next-steps details').open") is False
    browser.click('nav a[href="#next-steps"]')          # its link opens it
    assert browser.evaluate(OPENED % "#next-steps details") is True
    assert document["counts"]["not analysed"] == 2 and document["mutation_score"]["mutants"] == 2


@pytest.mark.parametrize("size", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_nothing_scrolls_the_page_sideways_and_no_figure_shrinks(browser, interrupted,
                                                                  deepcrime, size):
    """No page-level horizontal overflow at 390 and 1366 px (wide tables scroll in their
    own box); every figure shown at its own size, where its text is at least 9 px."""
    for path, _ in (interrupted, deepcrime):
        open_page(browser, path, size)
        widths = browser.evaluate("[document.documentElement.scrollWidth,"
                                  " document.documentElement.clientWidth,"
                                  " document.body.scrollWidth]")
        assert widths[0] <= widths[1] and widths[2] <= widths[1], (path.name, size, widths)
        shrunk = browser.evaluate(
            "Array.from(document.images).filter(i => i.getBoundingClientRect().width"
            " < +i.getAttribute('width') - 0.5).map(i => i.alt)")
        assert shrunk == [], (size, shrunk)


def test_every_column_is_visible_on_a_laptop_and_the_header_stays(browser, interrupted):
    """At 1366 px the whole table fits: no column hidden to the right. Scrolled half-way
    down the table, its header row is still at the top of the window."""
    path, document = interrupted
    open_page(browser, path, (LAPTOP[0], 400))
    box = browser.evaluate(
        "(() => { const t = document.getElementById('mutant-table');"
        " const w = t.parentElement; return [w.scrollWidth, w.clientWidth,"
        " Array.from(t.tHead.rows[0].cells).map(c => { const r = c.getBoundingClientRect();"
        " return [r.left, r.right]; }), document.documentElement.clientWidth]; })()")
    scroll_width, client_width, columns, window = box
    assert scroll_width <= client_width and len(columns) == 13
    assert all(0 <= left and right <= window for left, right in columns), columns
    header = browser.evaluate(
        "(() => { const t = document.getElementById('mutant-table');"
        " window.scrollTo(0, t.getBoundingClientRect().top + window.scrollY + 100);"
        " const h = t.tHead.rows[0].cells[0].getBoundingClientRect();"
        " const b = t.getBoundingClientRect();"
        " return [h.top, b.top, b.bottom]; })()")
    assert header[1] < -50 and header[2] > header[0] and abs(header[0]) <= 1, header


def test_on_a_phone_the_table_scrolls_in_its_box_under_its_header(browser, deepcrime):
    path, _ = deepcrime
    open_page(browser, path, PHONE)
    found = browser.evaluate(
        "(() => { const t = document.getElementById('mutant-table'); const w = t.parentElement;"
        " w.scrollIntoView(); w.scrollTop = 300;"
        " return [w.scrollHeight > w.clientHeight, w.scrollWidth > w.clientWidth,"
        " t.tHead.rows[0].cells[0].getBoundingClientRect().top - w.getBoundingClientRect().top,"
        " w.getBoundingClientRect().height <= window.innerHeight]; })()")
    assert found[0] and found[1] and abs(found[2]) <= 1 and found[3], found


def test_infinite_ratios_sort_as_the_largest(browser, deepcrime):
    """Ratio cells read inf (the posterior is the ideal mutant's): the strongest kills,
    on top when sorted down, at the bottom when sorted up."""
    path, document = deepcrime
    open_page(browser, path)
    ratios = [m["posterior"]["ratio"] for m in document["mutants"]]
    assert None in ratios          # infinite: null in JSON
    expected = sorted(float("inf") if r is None else r for r in ratios)
    for order in (expected, expected[::-1]):
        browser.click(f"#mutant-table th:nth-child({COLUMN['ratio']}) button")
        cells = [float(c) for c in browser.evaluate(CELLS.format(COLUMN["ratio"] - 1))]
        assert cells == pytest.approx(order)
        shown = browser.evaluate(f"{VISIBLE_ROWS}.map(r => r.cells[4].innerText)")
        assert (shown[-1] if order is expected else shown[0]) == "inf"


def test_magnitudes_sort_as_numbers(browser, deepcrime):
    path, document = deepcrime
    open_page(browser, path)
    browser.click(f"#mutant-table th:nth-child({COLUMN['mutant']}) button")
    names = browser.evaluate(NAMES)
    assert [n for n in names if n.startswith("change_label")] == [
        f"change_label_{m}" for m in ("3.12", "9.38", "18.75", "28.12", "56.25")]
    browser.click(f"#mutant-table th:nth-child({COLUMN['mutant']}) button")
    assert browser.evaluate(NAMES) == names[::-1]


def test_two_outcomes_at_once_kept_in_the_address(browser, interrupted):
    """Real clicks on two outcomes: their mutants only, the view in the URL's hash; the
    same address opened again shows the same view (to share it)."""
    path, document = interrupted
    open_page(browser, path)
    for outcome in ("flagged", "not-analysed"):
        browser.click(f'#outcomes input[value="{outcome}"]')
    wanted = [m["name"] for m in document["mutants"]
              if m["outcome"] in ("flagged", "not analysed")]
    assert len(wanted) == 3 and browser.evaluate(NAMES) == wanted
    assert browser.evaluate("location.hash") == "#show=flagged,not-analysed"
    browser.click("#filter")
    browser.type("delete")
    assert browser.evaluate("location.hash") == "#show=flagged,not-analysed&q=delete"
    again = [n for n in wanted if "delete" in n]
    assert browser.evaluate(NAMES) == again
    open_page(browser, path, fragment="show=flagged,not-analysed&q=delete")
    assert browser.evaluate(NAMES) == again
    assert browser.evaluate("Array.from(document.querySelectorAll('#outcomes input'))"
                            ".filter(b => b.checked).map(b => b.value)") == [
        "flagged", "not-analysed"]
    browser.click("#mutant-table tbody tr:not([hidden]) a")   # to a mutant's section
    assert browser.evaluate("location.hash").startswith("#m")
    assert browser.evaluate(NAMES) == again      # the view stays
    # its "back to the table" link returns to the table with the view (issue 56)
    browser.click("section.mutant:target a.back-to-table")
    browser.evaluate(SETTLED)
    assert browser.evaluate("location.hash") == "#show=flagged,not-analysed&q=delete"
    assert browser.evaluate(NAMES) == again and abs(browser.evaluate(TABLE_TOP)) <= 2


#: JavaScript: where the mutants' section is, relative to the top of the window.
TABLE_TOP = "document.getElementById('mutants').getBoundingClientRect().top"
#: JavaScript: a promise that the element matching a selector (%) is open, once the events
#: a navigation queued (hashchange) have run: false after 10 s (a loaded host runs them
#: some frames after the click).
OPENED = ("(() => { const e = document.querySelector('%s'); const start = performance.now();"
          " return new Promise(done => (function look() {"
          "   if (e.open || performance.now() - start > 10000) done(e.open);"
          "   else requestAnimationFrame(look); })()); })()")
#: JavaScript: a promise that the events a navigation queued (hashchange) have run.
SETTLED = "new Promise(done => setTimeout(() => requestAnimationFrame(done), 20))"


def test_a_shared_view_opens_at_the_table_sorted_as_it_was(browser, interrupted):
    """Issue 56: a shared `#show=...` link opens at the table, not at the top of the page;
    the order is kept in the address too (sort=KEY, -KEY the other way)."""
    path, document = interrupted
    open_page(browser, path, (LAPTOP[0], 500), fragment="show=killed,not-killed,flagged")
    assert browser.evaluate("window.scrollY") > 0 and abs(browser.evaluate(TABLE_TOP)) <= 2
    browser.click(f"#mutant-table th:nth-child({COLUMN['mean']}) button")
    assert browser.evaluate("location.hash") == "#show=killed,not-killed,flagged&sort=mean"
    browser.click(f"#mutant-table th:nth-child({COLUMN['mean']}) button")
    assert browser.evaluate("location.hash").endswith("&sort=-mean")
    means = [float(v) for v in browser.evaluate(
        f"{VISIBLE_ROWS}.map(r => r.cells[{COLUMN['mean'] - 1}].getAttribute('data-value'))")]
    open_page(browser, path, fragment="sort=-mean&show=killed,not-killed,flagged")
    assert [float(v) for v in browser.evaluate(
        f"{VISIBLE_ROWS}.map(r => r.cells[{COLUMN['mean'] - 1}].getAttribute('data-value'))"
    )] == means == sorted(means, reverse=True)
    assert browser.evaluate(f"document.querySelector('#mutant-table th:nth-child("
                            f"{COLUMN['mean']})').getAttribute('aria-sort')") == "descending"


def test_the_headers_are_buttons_the_keyboard_sorts_with(browser, deepcrime):
    """Issue 56: sortable headers are buttons (focusable, Space and Enter press them)."""
    path, document = deepcrime
    open_page(browser, path)
    header = f"#mutant-table th:nth-child({COLUMN['ratio']})"
    assert browser.evaluate(f"document.querySelector('{header} button').type") == "button"
    browser.evaluate(f"document.querySelector('{header} button').focus()")
    browser.press()                                     # the space bar
    assert browser.evaluate(f"document.querySelector('{header}').getAttribute('aria-sort')"
                            ) == "ascending"
    browser.press("Enter", "Enter", 13)
    assert browser.evaluate(f"document.querySelector('{header}').getAttribute('aria-sort')"
                            ) == "descending"


def _contrast(foreground: str, background: str) -> float:
    """WCAG's contrast ratio of two CSS rgb() colours."""
    def luminance(colour):
        channels = [int(v) / 255 for v in re.findall(r"\d+", colour)[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_every_outcome_badge_reads_at_4_5_to_1(browser, interrupted):
    """Issue 56: the "not settled" badge was #ef6c00 on white, 3.08:1; every outcome's
    badge, as the browser draws it, reaches WCAG AA's 4.5:1."""
    path, _ = interrupted
    open_page(browser, path)
    badges = browser.evaluate(
        "Array.from(new Set(Array.from(document.querySelectorAll('.tag')).map(t => {"
        " const s = getComputedStyle(t); return t.className + '|' + s.color + '|' +"
        " s.backgroundColor; })))")
    assert len({b.split("|")[0] for b in badges}) == 5
    for badge in badges:
        name, colour, background = badge.split("|")
        assert _contrast(colour, background) >= 4.5, badge


def test_a_u_shaped_posterior_is_drawn_high_in_its_figure(browser, deepcrime, mnist_dc):
    """change_label_3.12 of DeepCrime's populations: resamples kill always or never and
    the Beta summary's density is infinite at 0 and 1. The page draws its figure from its
    data: its curves are probmut.beta's (the mixture's and the Beta summary's densities
    on plot_posterior's grid, the axis capped as there); in the figure the bagged
    posterior's curve rises over most of the plot's height, the interval bar spans the
    interval (here nearly [0, 1]) and the mean's line stops below the "axis capped"
    label (issue 56: it crossed it)."""
    import numpy as np

    from probmut.beta import beta_pdf, mixture_pdf

    path, document = deepcrime
    open_page(browser, path)
    index = next(i for i, m in enumerate(document["mutants"])
                 if m["name"] == "change_label_3.12")
    post = mnist_dc.mutants[index].posterior
    assert post.alpha < 0.1 and post.beta < 0.1
    curves = browser.evaluate(f"window.probmutFigures.curves({index})")
    x = 0.5 - 0.5 * np.cos(np.linspace(0.002, np.pi - 0.002, 400))
    assert np.allclose(curves["x"], x, rtol=0, atol=1e-12)
    mixture, fitted = mixture_pdf(post.kill_counts, post.trials, x), beta_pdf(x, post.alpha,
                                                                             post.beta)
    assert np.allclose(curves["mixture"], mixture, rtol=1e-9, atol=0)
    assert np.allclose(curves["fitted"], fitted, rtol=1e-8, atol=0)
    inner = (x > 0.005) & (x < 0.995)
    assert curves["top"] == pytest.approx(1.12 * max(mixture.max(), fitted[inner].max(), 1))
    assert curves["ends"] == ["0", "1"]
    browser.evaluate(f"document.querySelector('.posterior[data-figure=\"{index}\"]')"
                     ".scrollIntoView()")
    found = browser.evaluate(
        f"(() => {{ const p = window.probmutFigures.draw({index});"
        " const box = s => p.querySelector(`[data-part=${s}]`).getBBox();"
        " const area = box('plot-area'), curve = box('bagged-mixture'), bar = box('interval'),"
        " mean = box('mean'), label = box('capped'); const r = p.getBoundingClientRect();"
        " return {area: [area.y, area.height, area.width], top: curve.y, bar: bar.width,"
        " mean: mean.y, label: label.y + label.height, shown: [r.width, r.height]}; })()")
    top, height, width = found["area"]
    assert (top + height - found["top"]) / height > 0.8, found
    assert found["bar"] / width > 0.9, found
    assert found["mean"] > found["label"], found
    assert found["shown"] == [346, 210]


def test_without_javascript_the_controls_say_they_cannot_work(browser, interrupted):
    path, document = interrupted
    browser.scripts(False)
    try:
        open_page(browser, path)
        found = browser.evaluate(
            "[getComputedStyle(document.querySelector('.controls')).display,"
            " document.getElementById('mutants').innerText,"
            " document.querySelector('#mutant-table th button') !== null]")
        names = browser.evaluate(NAMES)
    finally:
        browser.scripts(True)
    display, text, buttons = found
    assert display == "none" and not buttons
    assert "JavaScript is off: the table cannot be sorted or filtered here" in text
    assert "Click a column's header" not in text
    assert names == [m["name"] for m in document["mutants"]]
    open_page(browser, path)
    assert browser.evaluate("getComputedStyle(document.querySelector('.controls')).display"
                            ) == "flex"


def test_the_header_command_comparison_and_next_steps_as_the_reader_sees_them(
        browser, interrupted, tmp_path, monkeypatch):
    """Issue 56, (1) a comparison shows both scores with their intervals and mutant
    counts and the outcome of a new mutant; (2) the header's command, as the browser shows
    it, runs and gives the same numbers; (4) the next steps' command names the run by its
    full path, run from any folder (here: another one), and probmut train's parser takes
    it with the run's settings."""
    from probmut.cli.main import build_parser

    path, document = interrupted
    run = path.parent / "run"
    earlier = json.loads(json.dumps(document))
    added = earlier["mutants"].pop(1)
    earlier["mutation_score"] |= {"mean": 0.25, "ci_low": 0.125, "ci_high": 0.375,
                                  "mutants": 9}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(earlier))
    compared = path.parent / "compared.html"
    now = report_json(run, compared, *FAST, "--compare", old)["mutation_score"]
    open_page(browser, compared)
    heading = browser.evaluate("document.querySelector('#compare summary').innerText")
    assert heading == (f"Changes since the earlier report: 0 changed, 1 new, 0 gone; score "
                       f"0.250 [0.125, 0.375] then, {now['mean']:.3f} [{now['ci_low']:.3f}, "
                       f"{now['ci_high']:.3f}] now")
    browser.click("#compare summary")
    text = browser.evaluate("document.getElementById('compare').innerText")
    assert "0.250 [0.125, 0.375] of 9 mutants then" in text
    assert f"of {now['mutants']} mutants now" in text
    assert f"{added['name']}: new, {added['outcome']}" in text
    # (2) the command as shown runs, from where the page was written
    shown = browser.evaluate("document.querySelector('#produced code').innerText")
    assert "--resumes" not in shown and shown.startswith(f"probmut report {run} ")
    again = CLI.json(*shlex.split(shown)[1:], "--out", tmp_path / "again.html", "--quiet")
    assert again["mutation_score"] == document["mutation_score"] or "--compare" in shown
    # (4) next steps, from another folder
    open_page(browser, path)
    browser.click("#next-steps summary")
    command = browser.evaluate("document.getElementById('settle-command').innerText").strip()
    said = browser.evaluate("document.getElementById('next-steps').innerText")
    assert "run it from any folder" in said
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert (args.command, args.out, args.dataset, args.architecture, args.seed) == (
        "train", run.resolve(), "digits", "digits_cnn", 7)
    assert args.instances and Path(args.out).is_absolute()  # a run of a number of instances


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """The page of a synthetic campaign of 300 mutants of 60 instances
    (scripts/benchmarks/bench_report_scale.py writes it, as its benchmark does), and its
    document: cheaply, without verdicts (the benchmark measures a page with them: it is
    2.5 MB) and with 30 resamples of 30 trials (each mutant's figure data is then a little
    smaller)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_report_scale", REPO / "scripts" / "benchmarks" / "bench_report_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    run = bench.write_campaign(tmp_path_factory.mktemp("large") / "run", outcomes=False)
    out = run / "report.html"
    return out, report_json(run, out, "--no-verdicts", "--bootstraps", "30", "--trials",
                            "30"), bench


def test_a_page_of_300_mutants_is_small_and_its_first_screen_ready(browser, large):
    """Issue 56's scale: 300 mutants made a page of 21 MB (311 figures inline). Now under
    its 3 MB target; on a laptop's first screen the score, the whole per-operator table
    and the start of the mutants table, which sorts at once; nothing the page showed is
    lost: every mutant's row and section, each operator's figure, the overview in parts,
    and a mutant's figure drawn when it comes into view."""
    path, document, bench = large
    assert len(document["mutants"]) == 300 and path.stat().st_size < bench.MOST_BYTES
    open_page(browser, path)
    screen = browser.evaluate(
        "(() => { const b = s => document.querySelector(s).getBoundingClientRect();"
        " return [b('#mutation-score').bottom, b('#operator-table').bottom,"
        " b('#mutant-table tbody tr').top, b('#mutant-table tbody tr').bottom,"
        " window.innerHeight]; })()")
    assert screen[0] < screen[1] < screen[2] < screen[3] <= screen[4], screen
    browser.click(f"#mutant-table th:nth-child({COLUMN['mean']}) button")
    cells = [float(c) for c in browser.evaluate(CELLS.format(COLUMN["mean"] - 1))]
    assert cells == sorted(cells)
    assert browser.evaluate(NAMES + ".length") == 300
    assert browser.evaluate("document.querySelectorAll('section.mutant').length") == 300
    assert browser.evaluate("document.images.length") == matplotlib_figures(document)
    last = browser.evaluate(
        "(() => { const p = document.querySelector('.posterior[data-figure=\"299\"]');"
        " const before = p.hasAttribute('data-drawn'); p.scrollIntoView();"
        " const start = performance.now();"  # frames until drawn (10 s at most, a loaded host)
        " return new Promise(done => (function look() {"
        "   if (p.hasAttribute('data-drawn') || performance.now() - start > 10000)"
        "     done([before, p.hasAttribute('data-drawn')]);"
        "   else requestAnimationFrame(look); })()); })()")
    assert last == [False, True]


def test_on_a_phone_the_mutants_name_stays_in_view(browser, large):
    """Issue 56: scrolled sideways on a phone, the mutants table keeps each row's name."""
    path, _, _ = large
    open_page(browser, path, PHONE)
    found = browser.evaluate(
        "(() => { const t = document.getElementById('mutant-table'); const w = t.parentElement;"
        " w.scrollIntoView(); w.scrollLeft = 400; const cell = t.tBodies[0].rows[2].cells[0];"
        " const c = cell.getBoundingClientRect(), box = w.getBoundingClientRect();"
        " const hit = document.elementFromPoint(c.left + 20, c.top + c.height / 2);"
        " return [w.scrollLeft, c.left - box.left, cell.contains(hit)]; })()")
    assert found[0] >= 300 and abs(found[1]) <= 1 and found[2], found


def _visible_text(page) -> str:
    """The text of the page's top as the browser shows it (the header, the summary, the
    next steps' heading and the operators' table), the date masked."""
    text = page.evaluate("['header', '#summary', '#next-steps summary', '#operators']"
                         ".map(s => document.querySelector(s).innerText).join('\\n')")
    return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "DATE", text)


@pytest.mark.slow
def test_mnist_report_in_a_real_browser(browser, tmp_path, cli):
    """`probmut report --model mnist` (the README's example and screenshot) in the
    browser; the screenshot of its top (header, summary, next steps, operators) must show
    what the committed one shows (module notes)."""
    from PIL import Image, PngImagePlugin

    out = tmp_path / "mnist.html"
    document = cli.json("report", "--model", "mnist", "--out", out, "--quiet")
    assert document["complete"] is None and len(document["mutants"]) == 30
    check_in_browser(browser, out, document)
    browser.evaluate("window.scrollTo(0, 0)")
    bottom = browser.evaluate("Math.ceil(document.getElementById('operators')"
                              ".getBoundingClientRect().bottom + window.scrollY)")
    shot = _image(browser.screenshot({"x": 0, "y": 0, "width": LAPTOP[0],
                                      "height": bottom + 8}))
    text = _visible_text(browser)
    if os.environ.get("PROBMUT_UPDATE_SCREENSHOT"):
        info = PngImagePlugin.PngInfo()
        info.add_text("probmut-visible-text", text)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shot.save(SCREENSHOT, pnginfo=info, optimize=True)
    committed = Image.open(SCREENSHOT).text.get("probmut-visible-text", "")
    stale = "\n".join(difflib.unified_diff(committed.splitlines(), text.splitlines(),
                                           "committed screenshot", "the page now", lineterm=""))
    assert not stale, ("docs/figures/report_mnist.png is stale; redraw it with "
                       "PROBMUT_UPDATE_SCREENSHOT=1 python -m pytest -n 0 "
                       f"tests/report/test_page_in_a_browser.py -k mnist_report\n{stale}")


@pytest.mark.train
@pytest.mark.slow
def test_a_real_training_run_report_in_a_real_browser(browser, tmp_path, cli):
    """A tiny real run trained until settled (4 instances per side, 2 epochs): a
    source-level, a model-level and an equivalent-by-design mutant, with their outcomes,
    symptom records and rounds, reported and checked in the browser; the next steps'
    command is probmut train's, with the settings the run recorded."""
    pytest.importorskip("tensorflow")
    from probmut.cli.main import build_parser

    run = tmp_path / "tiny"
    cli.run("train", "--dataset", "digits", "--architecture", "digits_cnn", "--epochs", "2",
            "--quiet", "--until-settled", "--round", "4", "--max-instances", "4", "--sample",
            "4", "--mutation", "delete_training_data:50", "--mutation", "neurons_freezing:0.1",
            "--mutation", "data_shuffle", "--out", run)
    out = run / "report.html"
    document = report_json(run, out, "--sample", "4")
    assert document["complete"] is True and document["rounds"]
    by_name = {m["name"]: m for m in document["mutants"]}
    assert by_name["data_shuffle_1"]["outcome"] == "flagged"
    for name in ("delete_training_data_50", "neurons_freezing_0.1"):
        assert by_name[name]["symptoms"] and by_name[name]["inputs"] and by_name[name]["rounds"]
    check_in_browser(browser, out, document)
    steps = document["next_steps"]
    assert (steps["command"] is not None) == any(s["needed"] for s in steps["steps"])
    if steps["command"]:  # its run's settings (the command was run by hand: it resumes)
        args = build_parser().parse_args(shlex.split(steps["command"])[1:])
        recorded = json.loads((run / ".work" / "settings.json").read_text())
        assert (args.dataset, args.architecture, args.seed, args.epochs, args.out) == (
            "digits", "digits_cnn", recorded["seed"], 2, run.resolve())
