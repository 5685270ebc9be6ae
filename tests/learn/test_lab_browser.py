"""The lab in a real headless Chromium (Debian's chromium + chromium-driver, driven by Selenium).

One browser session serves every test here. Under CI (CI=true) a missing browser is a failure,
never a skip: `make test` installs it (scripts/install-browser.sh). Elsewhere these tests skip
with the reason. Screenshots go to $MINIGRAD_LAB_SHOTS (default: minigrad-out/lab-screenshots);
docs/img/lab/ holds the ones docs/lab.md shows (MINIGRAD_LAB_SHOTS=docs/img/lab to renew them).

Sizes: a laptop (1280x800) and a phone (390x844, and 360 px for the narrowest check), set with
Chrome's device metrics so the page sees exactly that viewport.
"""

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from lab_server import serving_lab

from minigrad.learn import tour
from minigrad.learn.lab import audit, steps

CHROMIUM = os.environ.get("MINIGRAD_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("MINIGRAD_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,800"]
SHOTS = Path(os.environ.get("MINIGRAD_LAB_SHOTS", "minigrad-out/lab-screenshots"))


def no_browser(reason: str):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI: the browser tests need a browser and {reason}; `make test` installs it "
                    "with scripts/install-browser.sh (apt-get install chromium chromium-driver)")
    pytest.skip(reason + " (install: apt-get install chromium chromium-driver; pip install selenium)")


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
        no_browser("selenium is not installed")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            no_browser(f"{path} is not there")
    options = Options()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="minigrad-lab-chromium-")
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


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
    """Make the page's viewport exactly `size` (a phone size also emulates a mobile browser)."""
    width, height = size
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})


def open_page(driver, lab, page, size=LAPTOP):
    viewport(driver, size)
    driver.get(lab.url + "#" + page)
    driver.refresh()  # a fresh page: the hash alone would keep the previous state
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")


def screenshot(driver, name, full=False):
    """Save SHOTS/name; full: the whole page's length at the viewport's width."""
    if full:
        width = driver.execute_script("return window.innerWidth")
        height = driver.execute_script("return document.documentElement.scrollHeight")
        viewport(driver, (width, min(height, 4000)))
    driver.save_screenshot(str(SHOTS / name))


def sideways_overflow(driver):
    """How many CSS pixels the page is wider than its viewport (0: no horizontal scrolling)."""
    return driver.execute_script(
        "return Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - window.innerWidth")


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
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#compare tbody td")]
    assert cells[1:4] == ["one shared row", "separate tensors", "not this time"]
    assert "0.1850" in cells[6] and "0.3222" in cells[6]
    assert cells[10] == "0.3222" and "right within 10%" in cells[8]
    screenshot(browser, "audit-untied.png")

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
    screenshot(browser, "audit-tied.png")
    screenshot(browser, "audit-tied-full.png", full=True)
    viewport(browser, LAPTOP)

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
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#compare tbody td")]
    assert cells[10] == f'{expected["actual"]["number"]:.4f}' and cells[3] == "right"


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
    assert charts.get_attribute("data-redraws") == "12"  # redrawn after each of the 12 chunks of 10
    lines = browser.find_elements(By.CSS_SELECTOR, "#chart-norm path.line")
    assert len(lines) == 4 and all(line.get_attribute("d").count("L") == 119 for line in lines)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart-updates circle")) > 10
    verdict = by_id(browser, "steps-verdict")
    assert verdict.is_displayed() and "You predicted: the untied model's" in verdict.text
    assert "longest silence was" in verdict.text
    assert verdict.text.endswith(("right", "not this time"))
    assert "Frequent row #0," in by_id(browser, "steps-status").text  # not "row 0 (#0)"
    screenshot(browser, "steps.png")


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


def test_the_distance_chart_marks_the_steps_a_row_did_not_move(browser, lab):
    """SGD, lazy, touched-only decay: the untied rare row stands still on most steps. Each such
    step is a mark in the chart's "no move" lane and the line breaks there (defect 3)."""
    from selenium.webdriver.common.by import By

    fields = {"optimizer": "sgd", "lr": "0.5", "weight_decay": "0.1", "decay": "touched", "lazy": True,
              "steps-n": 100, "steps-chunk": 50}
    body = {"optimizer": "sgd", "lr": 0.5, "weight_decay": 0.1, "decay": "touched", "lazy": True,
            "steps": 100, "chunk": 100}
    book = steps.RunBook()
    points = []
    with lab.compute_lock:
        run = book.start(body)["run"]
        while len(points) < 100:  # a chunk may end early when its 0.4 s are up
            points += book.advance({"run": run})["points"]["untied"]
    still = [p["step"] for p in points if p["rare"]["moved"] == 0]
    assert len(still) > 50  # the case the chart exists to show
    open_page(browser, lab, "steps")
    start_run(browser, **fields)
    wait(browser, lambda d: "Done: step 100 of 100" in by_id(d, "steps-status").text)
    marks = browser.find_elements(By.CSS_SELECTOR, '#chart-moved line.zero[data-series="rare row, untied"]')
    assert len(marks) == len(still)
    line = browser.find_element(By.CSS_SELECTOR, '#chart-moved path[data-series="rare row, untied"]')
    moving = [p["rare"]["moved"] > 0 for p in points]
    strokes = sum(1 for i, now in enumerate(moving) if now and (i == 0 or not moving[i - 1]))
    assert line.get_attribute("d").count("M") == strokes  # one stroke per run of moving steps
    assert "did not move" in browser.find_element(By.CSS_SELECTOR, "#chart-moved + figcaption").text
    assert "no move" in by_id(browser, "chart-moved").text
    browser.execute_script("arguments[0].scrollIntoView()", by_id(browser, "steps-verdict"))
    screenshot(browser, "steps-no-move.png")


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


# ---- every page at every size -----------------------------------------------------------------------

def fill_page(driver, lab, page):
    """Bring `page` to the state a learner sees mid-lesson (results shown)."""
    if page == "audit":
        commit_and_reveal(driver, "layout-shared", "larger-lookup", "0.3")
    elif page == "steps":
        start_run(driver, **{"steps-n": 60})
        wait(driver, lambda d: "Done: step 60 of 60" in by_id(d, "steps-status").text)
    else:
        by_id(driver, "answer-text").send_keys("0.1, 0.2, 0.3, 0.4")
        by_id(driver, "check").click()
        wait(driver, lambda d: by_id(d, "verdict").is_displayed())


@pytest.mark.parametrize("page", ["audit", "steps", "answer"])
@pytest.mark.parametrize("size", [LAPTOP, PHONE, NARROWEST], ids=["1280", "390", "360"])
def test_every_page_is_usable_without_sideways_scrolling(browser, lab, page, size):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, page, size)
    fill_page(browser, lab, page)
    assert sideways_overflow(browser) <= 0
    width = size[0]
    section = by_id(browser, f"page-{page}")
    fields = "input[type=text], input[type=number], select, textarea"
    for field in section.find_elements(By.CSS_SELECTOR, fields):
        if field.is_displayed():
            assert field.rect["width"] >= min(120, width / 4), (field.get_attribute("id"), field.rect)
            assert field.rect["x"] + field.rect["width"] <= width + 0.5, field.get_attribute("id")
    for figure in section.find_elements(By.CSS_SELECTOR, "figure svg"):
        assert figure.rect["width"] >= min(0.8 * (width - 48), 400), figure.rect  # a phone: one per row
    for panel in section.find_elements(By.CSS_SELECTOR, ".panel, table, figure"):
        if panel.is_displayed():
            left, right = panel.rect["x"], panel.rect["x"] + panel.rect["width"]
            assert left >= -0.5 and right <= width + 0.5, panel.rect
    if width != NARROWEST[0]:
        screenshot(browser, f"{page}-{width}.png", full=True)


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
