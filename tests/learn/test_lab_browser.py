"""The lab in a real headless Chromium (Debian's chromium + chromium-driver, driven by Selenium).

One browser session serves every test here; each width is set on it with Chrome's device metrics.
Under CI (CI=true) a missing browser or axe-core is a failure, never a skip: `make test` installs
both (scripts/install-browser.sh, scripts/install-axe.sh). Elsewhere these tests skip with the reason.

Widths: a laptop (1280x800) and two phones (390 and 360 px wide), each as a desktop window of that
width, so a classic scrollbar takes its 15 px and "no sideways scrolling" is measured against the
width left (the stricter case; a phone's overlay scrollbar takes none).

Every page is brought through its states (the audit: fresh, committed, revealed; steps over time:
fresh, running, stopped, done; the answer page: fresh, answered) at every width, and in each state:
no horizontal overflow, no serious or critical accessibility violation (axe-core, run in the page),
and on page 2 every move of the rare row painted. Screenshots go to $MINIGRAD_LAB_SHOTS (default:
minigrad-out/lab-screenshots); docs/img/lab/ holds the ones docs/lab.md shows
(MINIGRAD_LAB_SHOTS=docs/img/lab to renew them).
"""

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from lab_server import serving_lab
from learner_copies import WRONG_EMBEDDING, learners_folder

from minigrad.learn import tour
from minigrad.learn.lab import audit, steps
from minigrad.learn.lab.pieces import PieceBook
from minigrad.tools.install_hint import install_extra

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("MINIGRAD_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("MINIGRAD_CHROMEDRIVER", "/usr/bin/chromedriver")
AXE_DIR = Path(os.environ.get("MINIGRAD_AXE_DIR", ROOT / ".venv" / "axe-core"))
AXE = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,800"]
SHOTS = Path(os.environ.get("MINIGRAD_LAB_SHOTS", "minigrad-out/lab-screenshots")).resolve()


def no_browser(reason: str, install: str):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI: the browser tests need {reason}; `make test` installs it ({install})")
    pytest.skip(f"{reason} (install: {install})")


@pytest.fixture(scope="module")
def lab():
    yield from serving_lab()


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        no_browser("selenium, which is not installed", install_extra("dev"))
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            no_browser(f"{path}, which is not there", "sh scripts/install-browser.sh, as root, or "
                       "apt-get install chromium chromium-driver")
    options = Options()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="minigrad-lab-chromium-")
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(120)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def axe_source():
    """axe-core's script, to be run inside the page (never served by the lab)."""
    if not AXE.is_file():
        no_browser(f"axe-core at {AXE}, which is not there", "sh scripts/install-axe.sh")
    return AXE.read_text()


def by_id(driver, name):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, name)


def wait(driver, condition, timeout=60, poll=0.5):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # the page rebuilds its tables on every answer: an element read mid-rebuild is retried
    retried = [StaleElementReferenceException]
    return WebDriverWait(driver, timeout, poll_frequency=poll, ignored_exceptions=retried).until(condition)


LAPTOP, PHONE, NARROWEST = (1280, 800), (390, 844), (360, 740)
LARGEST = {"steps-vocab": 2000, "steps-width": 64, "steps-batch": 256, "steps-n": 5000, "steps-chunk": 200}


def viewport(driver, size):
    """Make the page's viewport exactly `size`: a desktop window that wide, scrollbar included."""
    width, height = size
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def open_page(driver, lab, page, size=LAPTOP):
    viewport(driver, size)
    driver.get(lab.url + "#" + page)
    driver.refresh()  # a fresh page: the hash alone would keep the previous state
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")


def screenshot(driver, name, full=False):
    """Save SHOTS/name (optimised); full: the whole page's length at the viewport's width (then the
    viewport is set back)."""
    width, height = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    if full:
        viewport(driver, (width, min(driver.execute_script("return document.documentElement.scrollHeight"),
                                     4000)))
    path = SHOTS / name
    driver.save_screenshot(str(path))
    if full:
        viewport(driver, (width, height))
    try:
        from PIL import Image
    except ImportError:  # matplotlib's Pillow is there with the lessons' extra; else keep it as it is
        return
    with Image.open(path) as image:
        image.save(path, optimize=True)


SIDEWAYS = """
const page = document.documentElement, width = page.clientWidth, out = [];
for (const e of document.body.querySelectorAll('*')) {
  const box = e.getBoundingClientRect();
  if (box.width && e.checkVisibility() && (box.right > width + 0.5 || box.left < -0.5)) {
    let inside = e.parentElement, clipped = false;  // inside a box that scrolls or clips: not the page's
    for (; inside && inside !== document.body; inside = inside.parentElement) {
      if (getComputedStyle(inside).overflowX !== 'visible') { clipped = true; break; }
    }
    if (!clipped) out.push(`${e.tagName.toLowerCase()}#${e.id}.${e.className.baseVal ?? e.className}`);
  }
}
return [Math.max(page.scrollWidth, document.body.scrollWidth) - width, out.slice(0, 10)];
"""


def sideways_overflow(driver):
    """(how many CSS pixels the page is wider than the width left beside its scrollbar, the elements
    that stick out); (0, []) when nothing scrolls sideways."""
    return tuple(driver.execute_script(SIDEWAYS))


def set_text(driver, name, value):
    """Type over a field's text and leave it (a change event, as a learner's edit)."""
    from selenium.webdriver.common.keys import Keys

    field = by_id(driver, name)
    field.send_keys(Keys.CONTROL, "a")  # select and type over (clear() would fire a change first)
    field.send_keys(value, Keys.TAB)


def choose(driver, select_id, value):
    from selenium.webdriver.support.ui import Select

    Select(by_id(driver, select_id)).select_by_value(value)


def options(driver, select_id):
    from selenium.webdriver.common.by import By

    return [o.get_attribute("value") for o in by_id(driver, select_id).find_elements(By.TAG_NAME, "option")]


def commit_and_reveal(driver, layout, larger, number=""):
    by_id(driver, layout).click()
    by_id(driver, larger).click()
    by_id(driver, "guess").send_keys(number)
    by_id(driver, "commit").click()
    wait(driver, lambda d: by_id(d, "reveal").is_enabled())
    by_id(driver, "reveal").click()
    wait(driver, lambda d: by_id(d, "audit-result").is_displayed())


def compare_rows(driver):
    """The comparison table: [question, your answer and its verdict, minigrad's] per row."""
    from selenium.webdriver.common.by import By

    return [[cell.text for cell in tr.find_elements(By.CSS_SELECTOR, "th, td")]
            for tr in driver.find_elements(By.CSS_SELECTOR, "#compare tbody tr")]


def shown_ledger(driver, param):
    """{row label: [cell texts]} of the ledger table the page shows for `param`."""
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.CSS_SELECTOR, f'table[data-param="{param}"]')
    return {tr.get_attribute("data-row"): [td.text for td in tr.find_elements(By.TAG_NAME, "td")[1:]]
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")}


def minigrad_ledger(tied, lock):
    """minigrad's own ledger for the tour's model, formatted as the page formats it."""
    with lock:
        return _ledger_rows(tied)


def _ledger_rows(tied):
    model = tour.Bridge(tour.seed_weights(), tied=tied)
    loss = model()
    with tour.ledger(names=model) as led:
        loss.backward()
    out = {}
    for param in model.parameters():
        t = led.table(param, labels=tour.VOCAB)
        rows = zip(t.row_labels, t.norms, t.stored, t.totals)
        out[t.label] = {label: [f"{v:.4f}" if held else "-" for v, held in zip(norms, stored)]
                        + [f"{total:.4f}"] for label, norms, stored, total in rows}
    return out



# ---- page 1 ---------------------------------------------------------------------------------------

def test_audit_untied_then_tied_shows_minigrads_numbers(browser, lab):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "audit")
    assert not by_id(browser, "reveal").is_enabled()  # nothing to reveal before a prediction
    assert not by_id(browser, "audit-result").is_displayed()
    commit_and_reveal(browser, "layout-shared", "larger-lookup", "0.3")
    expected = minigrad_ledger(False, lab.compute_lock)
    for label, rows in expected.items():
        assert shown_ledger(browser, label) == rows
    rows = compare_rows(browser)
    assert rows[0][1:] == ["one shared row\nnot this time", "separate tensors"]
    assert "0.1850" in rows[1][2] and "0.3222" in rows[1][2]
    assert rows[2][2] == "0.3222" and "right within 10%" in rows[2][0]

    by_id(browser, "mode-tied").click()  # toggling: the tied result waits for its own prediction
    wait(browser, lambda d: not d.find_element(By.ID, "audit-result").is_displayed())
    assert by_id(browser, "predict-mode").text == "tied"
    commit_and_reveal(browser, "layout-shared", "larger-classifier", "0.6")
    tied = minigrad_ledger(True, lab.compute_lock)["emb.weight = head.weight"]
    wait(browser, lambda d: shown_ledger(d, "emb.weight = head.weight") == tied)
    assert tied["1 cat"][-1] == "0.5799"
    assert "became dense" in by_id(browser, "ledger").text
    checks = browser.find_elements(By.CSS_SELECTOR, "#checks li")
    assert len(checks) == 3 and all(li.text.startswith("ok") for li in checks)
    svg = by_id(browser, "graph").find_element(By.TAG_NAME, "svg")
    assert svg.size["width"] > 300
    assert "emb.weight = head.weight" in svg.text and "row cat: ‖G‖ 0.5799" in svg.text

    by_id(browser, "mode-untied").click()  # back: untied was revealed for these controls: shown again
    wait(browser, lambda d: by_id(d, "result-mode").text == "untied" and d.find_element(
        By.ID, "audit-result").is_displayed())


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["1280", "390"])
def test_switching_the_vocabulary_never_strands_the_other_controls(browser, lab, size):
    """From a fresh page: to the corpus's words and back, the token and target lists follow, the
    size box works exactly for the corpus, and no error shows (issue 23, defect 1)."""
    open_page(browser, lab, "audit", size)
    assert not by_id(browser, "vocab_size").is_enabled()
    choose(browser, "vocab", "corpus")
    corpus = audit.corpus_words()[:12]
    wait(browser, lambda d: options(d, "token") == list(corpus))
    assert options(browser, "target") == list(corpus) and by_id(browser, "vocab_size").is_enabled()
    assert not by_id(browser, "error").is_displayed()
    set_text(browser, "vocab_size", "5")
    wait(browser, lambda d: options(d, "token") == list(corpus[:5]))
    choose(browser, "token", corpus[3])
    wait(browser, lambda d: not d.find_element("id", "error").is_displayed())
    commit_and_reveal(browser, "layout-separate", "larger-classifier")  # the page works in it
    assert by_id(browser, "audit-result").is_displayed()
    choose(browser, "vocab", "tour")
    wait(browser, lambda d: options(d, "token") == list(tour.VOCAB))
    assert by_id(browser, "token").get_attribute("value") == "cat"
    assert not by_id(browser, "vocab_size").is_enabled() and not by_id(browser, "error").is_displayed()
    assert not by_id(browser, "audit-result").is_displayed()  # a new question: predict again


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["1280", "390"])
def test_an_empty_prediction_says_what_to_choose_next_to_the_button(browser, lab, size):
    open_page(browser, lab, "audit", size)
    by_id(browser, "commit").click()
    hint = by_id(browser, "predict-hint")
    wait(browser, lambda d: hint.is_displayed())
    assert "Choose an answer to both questions" in hint.text
    assert not by_id(browser, "error").is_displayed()  # no server message at the top of the page
    button, note = by_id(browser, "commit").rect, hint.rect
    assert 0 <= note["y"] - (button["y"] + button["height"]) < 60  # right under the button
    assert not by_id(browser, "reveal").is_enabled()
    by_id(browser, "layout-separate").click()  # choosing clears the hint
    wait(browser, lambda d: not hint.is_displayed())


def test_a_control_change_asks_for_a_new_prediction(browser, lab):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "audit")
    commit_and_reveal(browser, "layout-separate", "larger-classifier")
    set_text(browser, "width", "8")
    wait(browser, lambda d: not d.find_element(By.ID, "audit-result").is_displayed())
    assert not by_id(browser, "compare-box").is_displayed()  # the old verdicts are not re-scored
    assert "the question did: predict again" in by_id(browser, "committed").text
    assert by_id(browser, "commit").is_enabled() and not by_id(browser, "reveal").is_enabled()
    assert len(by_id(browser, "context").get_attribute("value").split(",")) == 8

    book = audit.PredictionBook()  # the reveal for width 8, as the page should show it
    body = {"mode": "untied", "width": 8}
    prediction = book.commit({**body, "layout": "separate tensors", "larger": "lookup"})
    with lab.compute_lock:  # the server computes in this process too, one computation at a time
        expected = audit.audit({**body, "prediction": prediction.id}, book)
    commit_and_reveal(browser, "layout-separate", "larger-lookup")
    rows = compare_rows(browser)
    assert rows[2][2] == f'{expected["actual"]["number"]:.4f}' and rows[0][1].endswith("\nright")


def test_a_bad_input_replaces_the_stale_result_with_its_message(browser, lab):
    open_page(browser, lab, "audit")
    commit_and_reveal(browser, "layout-separate", "larger-classifier")
    set_text(browser, "context", "0.5, oops, 1")
    error = by_id(browser, "error")
    wait(browser, lambda d: error.is_displayed())
    assert "context: could not read the numbers" in error.text
    assert not by_id(browser, "audit-result").is_displayed()
    assert not by_id(browser, "compare-box").is_displayed()
    screenshot(browser, "audit-bad-input.png")


# ---- page 2 ---------------------------------------------------------------------------------------

def start_run(driver, prediction="steps-predict-untied", **fields):
    for name, value in fields.items():
        if name in ("optimizer", "decay"):
            choose(driver, name, value)
        elif name == "lazy":
            if by_id(driver, "lazy").is_selected() != value:
                by_id(driver, "lazy").click()
        else:
            set_text(driver, name, str(value))
    if prediction:
        by_id(driver, prediction).click()
    by_id(driver, "run").click()


def test_steps_plots_grow_as_the_steps_run(browser, lab):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "steps")
    start_run(browser, **{"steps-n": 120})
    wait(browser, lambda d: "Done: step 120 of 120" in by_id(d, "steps-status").text)
    charts = browser.find_element(By.CSS_SELECTOR, "#page-steps .charts")
    # redrawn after each chunk: 12 of 10 steps, or more when a busy machine ends a chunk at its 0.4 s
    assert int(charts.get_attribute("data-redraws")) >= 12
    lines = browser.find_elements(By.CSS_SELECTOR, "#chart-norm path.line")
    assert len(lines) == 4 and all(line.get_attribute("d").count("L") == 119 for line in lines)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart-updates .dot")) > 10
    verdict = by_id(browser, "steps-verdict")
    assert verdict.is_displayed() and "You predicted: the untied model's" in verdict.text
    assert "longest silence was" in verdict.text
    assert verdict.text.endswith(("right", "not this time"))
    assert "Frequent row #0," in by_id(browser, "steps-status").text  # not "row 0 (#0)"


def test_a_run_needs_a_prediction_and_says_so(browser, lab):
    open_page(browser, lab, "steps")
    by_id(browser, "run").click()
    hint = by_id(browser, "steps-hint")
    wait(browser, lambda d: hint.is_displayed())
    assert "Choose a prediction first" in hint.text and not by_id(browser, "error").is_displayed()
    assert by_id(browser, "steps-status").text == ""


def test_the_largest_run_shows_progress_at_once_and_stops_within_a_second(browser, lab):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "steps")
    largest = LARGEST
    start_run(browser, **largest)
    clicked = time.perf_counter()
    wait(browser, lambda d: by_id(d, "steps-status").text.startswith(("Starting", "Running")), timeout=1)
    charts = browser.find_element(By.CSS_SELECTOR, "#page-steps .charts")
    wait(browser, lambda d: int(charts.get_attribute("data-redraws") or 0) >= 2, timeout=10)
    first_chart = time.perf_counter() - clicked
    time.sleep(0.2)  # Stop lands while a chunk is being computed
    stop = time.perf_counter()
    by_id(browser, "stop").click()
    assert by_id(browser, "steps-status").text.startswith(("Stopping", "Stopped"))  # said at once
    wait(browser, lambda d: by_id(d, "run").is_enabled(), timeout=5, poll=0.02)
    stopped_after = time.perf_counter() - stop
    status = by_id(browser, "steps-status").text
    assert status.startswith("Stopped: step ") and "of 5000" in status
    redraws = charts.get_attribute("data-redraws")
    time.sleep(1.0)
    assert charts.get_attribute("data-redraws") == redraws  # nothing more arrives after the stop
    print(f"largest run: first chart after {first_chart:.2f} s, stopped {stopped_after:.2f} s after Stop")
    assert first_chart < 3.0 and stopped_after < 1.5  # 0.4 s chunks; the slack is for a busy machine
    assert "the run stopped at step" in by_id(browser, "steps-verdict").text


def test_a_refused_run_clears_the_previous_ones_status_and_charts(browser, lab):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "steps")
    start_run(browser, **{"steps-n": 20})
    wait(browser, lambda d: "Done: step 20 of 20" in by_id(d, "steps-status").text)
    start_run(browser, prediction=None, optimizer="adam", decay="catch_up")
    wait(browser, lambda d: by_id(d, "error").is_displayed())
    assert "decay='catch_up' needs decoupled weight decay" in by_id(browser, "error").text
    assert by_id(browser, "steps-status").text == "" and not by_id(browser, "steps-verdict").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#page-steps .charts svg *") == []
    assert by_id(browser, "run").is_enabled()


PAINTED = """
// Each line series of the distance chart, as painted: its moves (the server's numbers the page
// holds), the vertices of its path, its single-move markers, its no-move marks, and any sub-path
// that paints nothing (one point, no segment).
const out = {};
for (const mode of ["tied", "untied"]) for (const row of ["frequent", "rare"]) {
  const name = `${row} row, ${mode}`, sel = (what) => `#chart-moved ${what}[data-series="${name}"]`;
  const moved = steps.data.points[mode].map((p) => p[row].moved);
  const path = document.querySelector(sel("path"));
  const strokes = path ? path.getAttribute("d").split("M").filter(Boolean) : [];
  const visible = (e) => { const b = e.getBBox(); return b.width > 0 && b.height > 0; };
  out[name] = {moves: moved.filter((m) => m > 0).length, still: moved.filter((m) => m === 0).length,
    vertices: strokes.reduce((n, s) => n + s.split("L").length, 0),
    dots: [...document.querySelectorAll(sel(".move"))].filter(visible).length,
    marks: [...document.querySelectorAll(sel(".zero"))].filter(visible).length,
    empty: strokes.filter((s) => !s.includes("L")).length};
}
return out;
"""


def painted(driver):
    """{series: what the distance chart paints of it} (see PAINTED)."""
    return driver.execute_script(PAINTED)


def assert_every_move_is_painted(driver):
    for name, series in painted(driver).items():
        assert series["vertices"] + series["dots"] == series["moves"], (name, series)
        assert series["marks"] == series["still"] and series["empty"] == 0, (name, series)


SGD_LAZY_TOUCHED = {"optimizer": "sgd", "lr": "0.5", "weight_decay": "0.1", "decay": "touched", "lazy": True}


def test_every_move_of_the_rare_row_is_painted_and_every_still_step_marked(browser, lab):
    """SGD, lazy, touched-only decay, 200 steps: the untied rare row moves on a few steps, most of them
    between two steps without a move. Each such move is a marker of its own (a path of one point
    paints nothing), each still step a mark in the "no move" lane; the numbers are the server's."""
    body = {**SGD_LAZY_TOUCHED, "lr": 0.5, "weight_decay": 0.1, "steps": 200, "chunk": 200}
    book = steps.RunBook()
    points = []
    with lab.compute_lock:
        run = book.start(body)["run"]
        while len(points) < 200:  # a chunk may end early when its 0.4 s are up
            points += book.advance({"run": run})["points"]["untied"]
    moved = [p["rare"]["moved"] > 0 for p in points]
    alone = [i for i, m in enumerate(moved) if m and not (i > 0 and moved[i - 1])
             and not (i + 1 < len(moved) and moved[i + 1])]
    assert sum(moved) < 40 and len(alone) >= 5  # the case the chart must show
    open_page(browser, lab, "steps")
    start_run(browser, **SGD_LAZY_TOUCHED, **{"steps-n": 200, "steps-chunk": 50})
    wait(browser, lambda d: "Done: step 200 of 200" in by_id(d, "steps-status").text)
    rare = painted(browser)["rare row, untied"]
    assert rare["moves"] == sum(moved) and rare["still"] == len(moved) - sum(moved)
    assert rare["dots"] == len(alone)
    assert_every_move_is_painted(browser)
    assert "single marker" in by_id(browser, "caption-moved").text
    assert "no move" in by_id(browser, "chart-moved").text
    scroll_to(browser, "steps-status")
    screenshot(browser, "steps-no-move.png")


def test_the_four_series_differ_by_more_than_colour(browser, lab):
    open_page(browser, lab, "steps")
    start_run(browser, **{"steps-n": 30})
    wait(browser, lambda d: "Done: step 30 of 30" in by_id(d, "steps-status").text)
    legend = """
      return Object.fromEntries([...document.getElementById(arguments[0]).closest('figure')
        .querySelectorAll('.legend li')].map((li) => {
          const line = li.querySelector('line'), key = li.querySelector('.key');
          return [li.textContent, [line && line.getAttribute('stroke-dasharray'), key.tagName,
                                   key.classList.contains('filled')]];
        }));"""
    rows = browser.execute_script(legend, "chart-moved")
    assert len(rows) == 4 and len({tuple(s) for s in rows.values()}) == 4, rows  # each its dash and marker
    for name, (dash, marker, _) in rows.items():  # the chart draws them as the legend shows them
        for path in browser.find_elements("css selector", f'#chart-moved path[data-series="{name}"]'):
            assert path.get_attribute("stroke-dasharray") == dash
        assert all(m.tag_name == marker.lower() for m in browser.find_elements(
            "css selector", f'#chart-moved [data-series="{name}"]:not(path)'))
    models = browser.execute_script(legend, "chart-updates")
    assert len({tuple(s) for s in models.values()}) == 2, models


def tick_values(svg_element, axis):
    """The numbers written on an axis of a lab chart ('x': under it, 'y': left of it)."""
    from selenium.webdriver.common.by import By

    texts = svg_element.find_elements(By.CSS_SELECTOR, "text.chart-text")
    anchor = "middle" if axis == "x" else "end"
    values = []
    for t in texts:
        try:
            value = float(t.text)
        except ValueError:
            continue
        if t.get_attribute("text-anchor") == anchor:
            values.append(value)
    return values


def test_chart_ticks_are_round_and_legends_sit_beside_the_data(browser, lab):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "steps")
    start_run(browser, **{"steps-n": 137})
    wait(browser, lambda d: "Done: step 137 of 137" in by_id(d, "steps-status").text)
    for name, log_y in [("chart-norm", False), ("chart-moved", True), ("chart-return", False),
                        ("chart-updates", True)]:
        svg = by_id(browser, name)
        for axis in ("x", "y"):
            values = tick_values(svg, axis)
            assert len(values) >= 2, (name, axis)
            if (axis == "y" and log_y) or (axis == "x" and name == "chart-updates"):
                assert all(np.isclose(np.log10(v), round(np.log10(v))) for v in values), (name, values)
                continue
            gaps = np.diff(values)
            step = gaps[0]
            assert np.allclose(gaps, step), (name, axis, values)
            mantissa = step / 10 ** np.floor(np.log10(step))
            assert any(np.isclose(mantissa, m) for m in (1, 2, 5)), (name, axis, values)
            assert all(np.isclose(v / step, round(v / step)) for v in values), (name, axis, values)
        legend = svg.find_element(By.XPATH, "preceding-sibling::ul[@class='legend']")
        box, plot = legend.rect, svg.rect
        assert box["y"] + box["height"] <= plot["y"] + 1, name  # above the chart, never over the data
    assert "step" in by_id(browser, "chart-norm").text and "row norm" in by_id(browser, "chart-norm").text


# ---- page 3 ---------------------------------------------------------------------------------------

def shown_matrix(driver, caption):
    """The numbers of the page-3 table captioned `caption`, as the page shows them."""
    from selenium.webdriver.common.by import By

    for table in driver.find_elements(By.CSS_SELECTOR, "#question table"):
        if table.find_element(By.TAG_NAME, "caption").text == caption:
            return [[float(td.text) for td in tr.find_elements(By.TAG_NAME, "td")]
                    for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    raise AssertionError(f"no table captioned {caption!r}")


@pytest.mark.parametrize("mode, table", [("untied", "emb.weight"), ("untied", "head.weight"),
                                         ("tied", "emb.weight")])
def test_an_answer_worked_out_from_the_numbers_on_the_page_passes(browser, lab, mode, table):
    """Read E, W, h, p and y off the page (4 decimals), compute the row's gradient by hand, pass."""
    open_page(browser, lab, "answer")
    choose(browser, "answer-mode", mode)
    if mode == "untied":
        choose(browser, "answer-table", table)
    wait(browser, lambda d: f", {mode}; loss" in by_id(d, "question").text
         and table in by_id(d, "answer-what").text)
    E = np.array(shown_matrix(browser, "emb.weight E"))
    W = E if mode == "tied" else np.array(shown_matrix(browser, "head.weight W"))
    h = np.array(shown_matrix(browser, "h = E[token] + context")[0])
    p, y = np.array(shown_matrix(browser, "p = softmax(z), y")).T
    lookup, classifier = W.T @ (p - y), (p - y)[tour.CAT] * h  # the tour reads "cat" and asks for it
    gradient = {("untied", "emb.weight"): lookup, ("untied", "head.weight"): classifier,
                ("tied", "emb.weight"): lookup + classifier}[mode, table]
    text = by_id(browser, "answer-text")
    text.send_keys(", ".join(f"{x:.7f}" for x in gradient))
    by_id(browser, "check").click()
    wait(browser, lambda d: by_id(d, "verdict").is_displayed())
    assert by_id(browser, "verdict").text.startswith("pass"), by_id(browser, "verdict").text
    assert "within" in by_id(browser, "answer-tolerance").text
    page = by_id(browser, "page-answer").text
    assert "cross-entropy" in page and "one-hot" in page


def test_check_an_answer_gives_the_verdict(browser, lab):
    from selenium.webdriver.common.keys import Keys

    open_page(browser, lab, "answer")
    model = tour.Bridge(tour.seed_weights(), tied=False)
    with lab.compute_lock:
        model().backward()
    gradient = model.emb.weight.grad.to_dense()[tour.CAT]
    text = by_id(browser, "answer-text")
    text.send_keys(", ".join(repr(float(-x)) for x in gradient))
    by_id(browser, "check").click()
    wait(browser, lambda d: "sign is flipped" in by_id(d, "verdict").text)
    assert by_id(browser, "answer-what").text.startswith("dL/dE[cat] (emb.weight, row 1)")
    screenshot(browser, "answer.png")
    text.send_keys(Keys.CONTROL, "a")
    text.send_keys("1, 2, three")
    by_id(browser, "check").click()
    wait(browser, lambda d: by_id(d, "error").is_displayed())
    assert "answer: could not read the numbers" in by_id(browser, "error").text
    assert not by_id(browser, "verdict").is_displayed()  # no stale verdict beside the message


# ---- the learner's pieces -------------------------------------------------------------------------

def pieces_shown(driver):
    """{piece: the line the panel shows for it}."""
    from selenium.webdriver.common.by import By

    items = driver.find_elements(By.CSS_SELECTOR, "#pieces-list li")  # in a details, maybe closed
    return {li.get_attribute("data-piece"): " ".join(li.get_attribute("textContent").split()) for li in items}


def test_the_lab_runs_on_your_passing_pieces_says_so_and_gives_minigrads_numbers(browser, lab, axe_source,
                                                                                  tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where `make lab` runs: the copies show as minigrad-exercises/...
    put = learners_folder(tmp_path / "minigrad-exercises", monkeypatch)
    for number in (4, 5, 6, 7):
        put(number)
    open_page(browser, lab, "audit")
    wait(browser, lambda d: len(pieces_shown(d)) == 4)
    assert all(": yours, from minigrad-exercises/0" in line for line in pieces_shown(browser).values())
    summary = by_id(browser, "pieces-summary").text
    assert summary == "Yours: Embedding, CrossEntropy, tie_weights, lazy_adamw_rows."
    assert by_id(browser, "use-pieces").is_selected()  # on by default once they pass
    by_id(browser, "mode-tied").click()
    commit_and_reveal(browser, "layout-shared", "larger-classifier")
    computed = by_id(browser, "computed-by").text
    assert "your Embedding" in computed and "your CrossEntropy" in computed and "your tie_weights" in computed
    assert by_id(browser, "computed-head").text == "computed on your pieces"
    tied = minigrad_ledger(True, lab.compute_lock)["emb.weight = head.weight"]
    assert shown_ledger(browser, "emb.weight = head.weight") == tied  # minigrad's numbers, to 4 decimals
    assert "EmbeddingBackward (yours)" in by_id(browser, "ledger").text
    assert "(yours)" in by_id(browser, "graph").text
    assert serious_violations(browser, axe_source) == []
    by_id(browser, "pieces-details").find_element("css selector", "summary").click()  # each piece, whence
    scroll_to(browser, "pieces-panel")
    screenshot(browser, "audit-yours-1280.png")
    for size in (PHONE, NARROWEST):  # the panel's long lines fit a phone too
        viewport(browser, size)
        assert sideways_overflow(browser) == (0, []) and serious_violations(browser, axe_source) == []
        scroll_to(browser, "pieces-panel")
        screenshot(browser, f"audit-yours-{size[0]}.png")
    viewport(browser, LAPTOP)

    by_id(browser, "use-pieces").click()  # off: the same question, on minigrad's pieces
    off = "minigrad's Embedding (yours passes; the switch is off)"
    wait(browser, lambda d: off in by_id(d, "computed-by").text)
    assert shown_ledger(browser, "emb.weight = head.weight") == tied
    assert "(yours)" not in by_id(browser, "ledger").text

    open_page(browser, lab, "steps")
    start_run(browser, **{"steps-n": 30, "steps-chunk": 30})
    wait(browser, lambda d: "Done: step 30 of 30" in by_id(d, "steps-status").text)
    trained = by_id(browser, "steps-pieces").text
    assert "your lazy_adamw_rows" in trained and "your tie_weights" in trained and "your Embedding" in trained
    shown = browser.execute_script("return steps.data.points")
    with lab.compute_lock:  # minigrad's own pieces, the same run
        book = steps.RunBook()
        body = {"steps": 30, "chunk": 30, "optimizer": "adamw", "lazy": True, "decay": "touched"}
        run = book.start(body)["run"]
        theirs = {"tied": [], "untied": []}
        while len(theirs["tied"]) < 30:
            chunk = book.advance({"run": run})
            for mode in theirs:
                theirs[mode] += chunk["points"][mode]
    for mode in ("tied", "untied"):
        for mine, minigrads in zip(shown[mode], theirs[mode]):
            assert np.isclose(mine["rare"]["norm"], minigrads["rare"]["norm"], rtol=1e-9)
            assert np.isclose(mine["frequent"]["moved"], minigrads["frequent"]["moved"], rtol=1e-6)


def test_a_piece_that_fails_its_check_is_never_used_and_the_page_says_why(browser, lab, tmp_path,
                                                                          monkeypatch):
    put = learners_folder(tmp_path / "mine", monkeypatch)
    put(4, WRONG_EMBEDDING)
    open_page(browser, lab, "audit")
    wait(browser, lambda d: "Embedding" in pieces_shown(d))
    line = pieces_shown(browser)["Embedding"]
    assert ": minigrad's (your copy does not pass yet (" in line
    assert by_id(browser, "pieces-summary").text.startswith(
        "minigrad's: Embedding (does not pass its check yet), CrossEntropy (not built yet)")
    switch = by_id(browser, "use-pieces")
    assert not switch.is_selected() and not switch.is_enabled()  # nothing of yours passes
    commit_and_reveal(browser, "layout-separate", "larger-classifier")
    (why,) = [p["why"] for p in PieceBook().status() if p["name"] == "Embedding"]  # the check's words
    assert why in line and f"minigrad's Embedding ({why})" in by_id(browser, "computed-by").text
    assert shown_ledger(browser, "emb.weight") == minigrad_ledger(False, lab.compute_lock)["emb.weight"]
    assert "(yours)" not in by_id(browser, "ledger").text


# ---- every page, in every state, at every width: no overflow, no serious accessibility violation ----

AXE_RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ["violations"]}).then(
  (result) => done(result.violations.map((v) => [v.id, v.impact, v.help,
                                                 v.nodes.slice(0, 3).map((n) => n.target.join(" "))])),
  (error) => done([["axe-failed", "critical", String(error), []]]));
"""


def serious_violations(driver, axe_source):
    """axe-core's serious and critical violations on the page as it is now: [id, impact, help, where]."""
    if not driver.execute_script("return typeof window.axe === 'object'"):
        driver.execute_script(axe_source)  # into this page only; the lab never serves it
    return [v for v in driver.execute_async_script(AXE_RUN) if v[1] in ("serious", "critical")]


def scroll_to(driver, element_id):
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView({block: 'start'});"
                          "window.scrollBy(0, -8);", element_id)


def check_state(driver, axe_source, page, state, width, shown=None):
    """The checks every state gets; then its screenshot, `shown` scrolled into view."""
    overflow, sticking_out = sideways_overflow(driver)
    assert overflow <= 0 and sticking_out == [], (page, state, width, overflow, sticking_out)
    assert serious_violations(driver, axe_source) == [], (page, state, width)
    if page == "steps" and state != "fresh":
        assert_every_move_is_painted(driver)
    if shown:
        scroll_to(driver, shown)
    else:  # the top of the page (a reload keeps the scroll of the page before)
        driver.execute_script("window.scrollTo(0, 0)")
    screenshot(driver, f"{page}-{state}-{width}.png")


def wait_for_chunks(driver, at_least):
    wait(driver, lambda d: d.execute_script(
        "return Number(document.querySelector('#page-steps .charts').dataset.redraws || 0)") >= at_least)


@pytest.mark.parametrize("size", [LAPTOP, PHONE, NARROWEST], ids=["1280", "390", "360"])
def test_every_page_in_every_state_fits_the_width_and_passes_axe(browser, lab, axe_source, size):
    width = size[0]
    open_page(browser, lab, "audit", size)
    check_state(browser, axe_source, "audit", "fresh", width)
    by_id(browser, "layout-shared").click()
    by_id(browser, "larger-lookup").click()
    by_id(browser, "guess").send_keys("0.3")
    by_id(browser, "commit").click()
    wait(browser, lambda d: by_id(d, "reveal").is_enabled())
    check_state(browser, axe_source, "audit", "committed", width, shown="predict-form")
    by_id(browser, "reveal").click()
    wait(browser, lambda d: by_id(d, "audit-result").is_displayed())
    check_state(browser, axe_source, "audit", "revealed", width, shown="compare-box")

    open_page(browser, lab, "steps", size)
    check_state(browser, axe_source, "steps", "fresh", width)
    start_run(browser, **LARGEST)
    wait_for_chunks(browser, 2)
    check_state(browser, axe_source, "steps", "running", width, shown="steps-status")
    by_id(browser, "stop").click()
    wait(browser, lambda d: by_id(d, "run").is_enabled())
    assert by_id(browser, "steps-status").text.startswith("Stopped: step ")
    check_state(browser, axe_source, "steps", "stopped", width, shown="steps-status")
    open_page(browser, lab, "steps", size)  # the defaults (lazy AdamW, touched-only decay), 200 steps
    start_run(browser, **{"steps-n": 200, "steps-chunk": 50})
    wait(browser, lambda d: "Done: step 200 of 200" in by_id(d, "steps-status").text)
    check_state(browser, axe_source, "steps", "done", width, shown="steps-status")

    open_page(browser, lab, "answer", size)
    check_state(browser, axe_source, "answer", "fresh", width)
    by_id(browser, "answer-text").send_keys("0.1, 0.2, 0.3, 0.4")
    by_id(browser, "check").click()
    wait(browser, lambda d: by_id(d, "verdict").is_displayed())
    check_state(browser, axe_source, "answer", "answered", width, shown="answer-form")
    if width == LAPTOP[0]:  # the whole audit, tied, for docs/lab.md
        open_page(browser, lab, "audit", size)
        by_id(browser, "mode-tied").click()
        commit_and_reveal(browser, "layout-shared", "larger-classifier", "0.6")
        screenshot(browser, "audit-tied-full.png", full=True)


def test_each_charts_numbers_are_its_text_alternative(browser, lab, axe_source):
    """Opened, a chart's "The numbers of this chart" holds every point it draws, as a table."""
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "steps")
    start_run(browser, **{"steps-n": 40})
    wait(browser, lambda d: "Done: step 40 of 40" in by_id(d, "steps-status").text)
    for figure in browser.find_elements(By.CSS_SELECTOR, "#page-steps figure"):
        chart = figure.find_element(By.CSS_SELECTOR, ":scope > svg")
        assert chart.get_attribute("role") == "img" and "numbers" in chart.get_attribute("aria-label")
        figure.find_element(By.TAG_NAME, "summary").click()  # the table is built on the toggle event
        wait(browser, lambda d, f=figure: f.find_elements(By.CSS_SELECTOR, "details tbody tr"), 10, 0.1)
        rows = figure.find_elements(By.CSS_SELECTOR, "details tbody tr")
        if chart.get_attribute("id") in ("chart-norm", "chart-moved"):
            assert len(rows) == 40  # one row per step, a column per series
            assert len(rows[0].find_elements(By.TAG_NAME, "td")) == 5
        else:
            assert len(rows) == len(chart.find_elements(By.CSS_SELECTOR, ".dot"))
    points = browser.execute_script("return steps.data.points.tied.map((p) => p.rare.norm)")
    table = browser.find_element(By.CSS_SELECTOR, "#chart-norm ~ details tbody")
    shown = [float(row.find_elements(By.TAG_NAME, "td")[2].text)
             for row in table.find_elements(By.TAG_NAME, "tr")]
    assert np.allclose(shown, points, rtol=1e-3)  # rare row, tied: the server's numbers to 4 figures
    assert serious_violations(browser, axe_source) == []


# ---- keyboard only: every page's task, with the focus visible all the way ----------------------------

FOCUS = """
const e = document.activeElement;
if (!e || e === document.body) return [null, true];
const style = getComputedStyle(e);
const ring = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
return [e.id || e.tagName.toLowerCase() + ':' + (e.textContent || '').trim().slice(0, 30), ring];
"""


def press(driver, *keys):
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def tab_to(driver, element_id, limit=80):
    """Press Tab until `element_id` has the focus, checking that every element focused on the way
    shows it (an outline of at least 2 px)."""
    from selenium.webdriver.common.keys import Keys

    for _ in range(limit):
        press(driver, Keys.TAB)
        focused, visible = driver.execute_script(FOCUS)
        assert visible, f"the focus on {focused} is not visible"
        if focused == element_id:
            return
    raise AssertionError(f"{element_id} was not reached in {limit} presses of Tab")


def type_over(driver, text):
    from selenium.webdriver.common.keys import Keys

    press(driver, Keys.CONTROL, "a")
    press(driver, text)


def test_each_pages_task_done_with_the_keyboard_alone(browser, lab):
    from selenium.webdriver.common.keys import Keys

    open_page(browser, lab, "audit")
    tab_to(browser, "layout-separate")
    press(browser, Keys.SPACE)
    tab_to(browser, "larger-lookup")
    press(browser, Keys.SPACE)
    tab_to(browser, "guess")
    press(browser, "0.3")
    tab_to(browser, "commit")
    press(browser, Keys.ENTER)  # commit: the focus moves to Reveal
    wait(browser, lambda d: d.execute_script("return document.activeElement.id") == "reveal")
    press(browser, Keys.ENTER)
    wait(browser, lambda d: by_id(d, "audit-result").is_displayed())
    assert compare_rows(browser)[0][1] == "separate tensors\nright"

    open_page(browser, lab, "audit")
    tab_to(browser, "nav-steps")  # to page 2 by its link
    press(browser, Keys.ENTER)
    wait(browser, lambda d: by_id(d, "page-steps").is_displayed())
    tab_to(browser, "steps-predict-tied")
    press(browser, Keys.ARROW_DOWN)  # the next answer of the group: the untied model's
    assert by_id(browser, "steps-predict-untied").is_selected()
    tab_to(browser, "steps-n")
    type_over(browser, "5000")
    tab_to(browser, "run")
    press(browser, Keys.ENTER)  # run: the focus moves to Stop
    wait(browser, lambda d: "Running" in by_id(d, "steps-status").text)
    wait(browser, lambda d: d.execute_script("return document.activeElement.id") == "stop")
    wait_for_chunks(browser, 1)
    press(browser, Keys.ENTER)  # stop: the focus comes back to Run
    wait(browser, lambda d: by_id(d, "steps-status").text.startswith("Stopped"))
    wait(browser, lambda d: d.execute_script("return document.activeElement.id") == "run")
    tab_to(browser, "chart-moved-numbers")  # a chart's numbers open from the keyboard too
    press(browser, Keys.ENTER)
    wait(browser, lambda d: d.execute_script(
        "return document.getElementById('chart-moved-numbers').parentElement.open"))

    open_page(browser, lab, "audit")
    tab_to(browser, "nav-answer")
    press(browser, Keys.ENTER)
    wait(browser, lambda d: by_id(d, "page-answer").is_displayed())
    model = tour.Bridge(tour.seed_weights(), tied=False)
    with lab.compute_lock:
        model().backward()
    gradient = model.emb.weight.grad.to_dense()[tour.CAT]
    tab_to(browser, "answer-text")
    press(browser, ", ".join(f"{x:.6f}" for x in gradient))
    tab_to(browser, "check")
    press(browser, Keys.ENTER)
    wait(browser, lambda d: by_id(d, "verdict").is_displayed())
    assert by_id(browser, "verdict").text.startswith("pass")


def test_a_page_left_mid_run_leaves_no_traceback(browser, lab, capfd):
    """Reload the page while the largest chunk computes: the server notes nothing, or one line."""
    open_page(browser, lab, "steps")
    largest = LARGEST
    start_run(browser, **largest)
    wait(browser, lambda d: d.execute_script(
        "return Number(document.querySelector('#page-steps .charts').dataset.redraws || 0)") >= 1)
    for _ in range(3):
        time.sleep(0.2)
        browser.get(lab.url + "#audit")  # the tab moves on while a chunk is on its way
    time.sleep(1.5)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Error" not in err, err
