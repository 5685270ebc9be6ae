"""The lab in a real headless Chromium (Debian's chromium + chromium-driver, driven by Selenium).

One browser session serves every test here. Under CI (CI=true) a missing browser is a failure,
never a skip: `make test` installs it (scripts/install-browser.sh). Elsewhere these tests skip
with the reason. Screenshots go to $MINIGRAD_LAB_SHOTS (default: minigrad-out/lab-screenshots).
"""

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from lab_server import serving_lab

from minigrad.learn import tour
from minigrad.learn.lab import audit

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


def wait(driver, condition, timeout=60):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # the page rebuilds its tables on every answer: an element read mid-rebuild is retried
    retried = [StaleElementReferenceException]
    return WebDriverWait(driver, timeout, ignored_exceptions=retried).until(condition)


def open_page(driver, lab, page):
    driver.get(lab.url + "#" + page)
    driver.refresh()  # a fresh page: the hash alone would keep the previous state
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")


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
    assert cells[10] == "0.3222"
    browser.save_screenshot(str(SHOTS / "audit-untied.png"))

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
    browser.set_window_size(1280, 1900)
    browser.save_screenshot(str(SHOTS / "audit-tied-full.png"))
    browser.set_window_size(1280, 800)
    browser.save_screenshot(str(SHOTS / "audit-tied.png"))

    by_id(browser, "mode-untied").click()  # back: untied was revealed, so it recomputes at once
    wait(browser, lambda d: by_id(d, "result-mode").text == "untied" and d.find_element(
        By.ID, "audit-result").is_displayed())


def test_a_control_change_recomputes_and_a_bad_input_shows_its_message(browser, lab):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    book = audit.PredictionBook()
    prediction = book.commit({"mode": "untied", "layout": "separate tensors", "larger": "lookup"})
    with lab.compute_lock:  # the server computes in this process too, one computation at a time
        expected = audit.audit({"context": "0.5, 0.5, -0.5, 1", "prediction": prediction.id}, book)
    open_page(browser, lab, "audit")
    commit_and_reveal(browser, "layout-separate", "larger-classifier")
    context = by_id(browser, "context")
    context.send_keys(Keys.CONTROL, "a")  # select and type over (clear() would fire a change first)
    context.send_keys("0.5, 0.5, -0.5, 1", Keys.TAB)
    number = f'{expected["actual"]["number"]:.4f}'
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#compare tbody td")[10].text == number)
    assert not np.isclose(float(number), 0.3222, atol=1e-4)

    context.send_keys(Keys.CONTROL, "a")
    context.send_keys("0.5, oops, 1", Keys.TAB)
    error = by_id(browser, "error")
    wait(browser, lambda d: error.is_displayed())
    assert "context: could not read the numbers" in error.text
    browser.save_screenshot(str(SHOTS / "audit-bad-input.png"))


def test_steps_plots_grow_as_the_steps_run(browser, lab):
    from selenium.webdriver.common.by import By

    open_page(browser, lab, "steps")
    by_id(browser, "steps-n").clear()
    by_id(browser, "steps-n").send_keys("120")
    by_id(browser, "run").click()
    wait(browser, lambda d: "Step 120 of 120" in by_id(d, "steps-status").text)
    charts = browser.find_element(By.CSS_SELECTOR, "#page-steps .charts")
    assert charts.get_attribute("data-redraws") == "12"  # redrawn after each of the 12 chunks of 10
    lines = browser.find_elements(By.CSS_SELECTOR, "#chart-norm polyline")
    assert len(lines) == 4 and all(len(line.get_attribute("points").split()) == 120 for line in lines)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart-updates circle")) > 10
    browser.save_screenshot(str(SHOTS / "steps.png"))
    browser.set_window_size(1280, 1200)
    browser.save_screenshot(str(SHOTS / "steps-full.png"))
    browser.set_window_size(1280, 800)
    by_id(browser, "optimizer").send_keys("Adam")  # keyboard: the select takes typed names
    by_id(browser, "decay").send_keys("catch")
    by_id(browser, "run").click()
    wait(browser, lambda d: by_id(d, "error").is_displayed())
    assert "decay='catch_up' needs decoupled weight decay" in by_id(browser, "error").text


def test_check_an_answer_gives_the_verdict(browser, lab):
    from selenium.webdriver.common.keys import Keys

    open_page(browser, lab, "answer")
    model = tour.Bridge(tour.seed_weights(), tied=False)
    with lab.compute_lock:
        model().backward()
    gradient = model.emb.weight.grad.to_dense()[tour.CAT]
    right = ", ".join(repr(float(x)) for x in gradient)
    text = by_id(browser, "answer-text")
    text.send_keys(right)
    by_id(browser, "check").click()
    wait(browser, lambda d: by_id(d, "verdict").is_displayed())
    assert by_id(browser, "verdict").text.startswith("pass")
    text.send_keys(Keys.CONTROL, "a")
    text.send_keys(", ".join(repr(float(-x)) for x in gradient))
    by_id(browser, "check").click()
    wait(browser, lambda d: "sign is flipped" in by_id(d, "verdict").text)
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    browser.save_screenshot(str(SHOTS / "answer.png"))
    text.send_keys(Keys.CONTROL, "a")
    text.send_keys("1, 2, three")
    by_id(browser, "check").click()
    wait(browser, lambda d: by_id(d, "error").is_displayed())
    assert "answer: could not read the numbers" in by_id(browser, "error").text
    assert not by_id(browser, "verdict").is_displayed()  # no stale verdict beside the message
