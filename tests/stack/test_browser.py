"""What a new user looks at after `make demo`, in a real browser: Debian's headless Chromium, driven through its
chromium-driver by Selenium, against the session's local stack (tests/stack/conftest.py: a home and ports of its own) after
`bitextflow-local demo` ran the en-es DAG in it.

The user signs into the Airflow UI, opens the pair's DAG, sees the run and each task's counts (XCom
``counts.<shard>``), follows a gate task's Data Docs link (the API server's ``/bitextflow/data-docs`` route) and
opens the release's report. Airflow's UI is a React app: every check waits for what it looks for (explicit waits,
no sleeps). The browser resolves no host name (``--host-resolver-rules``), so pages that name a CDN (Great
Expectations' Data Docs do) cannot take it off 127.0.0.1. Each test saves a screenshot of every page it checks
under its ``tmp_path`` and names the last one in its failure message.

The evaluation page (docs/evaluation.md) is driven from the keyboard over the demo's release, and shown a pair
holding markup, which it must show as text.

``BITEXTFLOW_README_IMAGES=docs/images`` also writes the README's two pictures (the UI and the report) and
docs/evaluation.md's (the evaluation page) from the same pages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from bitextflow.catalog.evaluations import read_labels
from bitextflow.catalog.releases import list_releases, publish_release
from bitextflow.release.evaluation_sample import DEFAULT_SAMPLE_SIZE
from bitextflow.storage import ObjectStore
from bitextflow_local.services.demo import airflow_api
from bitextflow_local.services.stack import admin_password
from tests.support import env_file
from tests.support.stack import DAG_ID, Demo

BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# what this machine's Chromium needs headless, and nothing that reaches beyond 127.0.0.1
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--window-size=1280,800",
)  # fmt: skip
#: an element the UI has not drawn in five minutes, on a loaded machine too, it never will: a hang, not a slow machine
WAIT_S = 300
REPORT_SECTIONS = (
    "Summary", "Quality gates", "Sentence length", "Score: alignment_score", "Yield per site", "Counts per stage", "Crawl efficiency",
)  # fmt: skip
README_IMAGES = os.environ.get("BITEXTFLOW_README_IMAGES")


class Browser:
    """A Chromium session with a fresh profile; ``expect`` waits for a condition and fails with a screenshot."""

    def __init__(self, driver: WebDriver, shots: Path) -> None:
        self.driver = driver
        self.shots = shots
        self.last_shot: Path | None = None

    def visit(self, url: str) -> None:
        self.driver.get(url)

    def expect(self, condition: Callable[[WebDriver], Any], what: str) -> Any:
        """``condition``'s first truthy result, waited for up to :data:`WAIT_S` seconds. The UI re-renders as its data
        arrives, so an element found by one poll may be replaced before the next look at it: that poll counts as not
        yet, not as a failure."""
        try:
            return WebDriverWait(self.driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(condition)
        except TimeoutException:
            pytest.fail(self.failure(f"{what}: not seen in {WAIT_S} s"))

    def screenshot(self, name: str) -> Path:
        self.last_shot = self.shots / f"{len(list(self.shots.iterdir())):02d}-{name}.png"
        self.driver.save_screenshot(str(self.last_shot))
        return self.last_shot

    def failure(self, message: str) -> str:
        """``message`` with the page it is about and a screenshot of it."""
        return f"{message} at {self.driver.current_url}; screenshot {self.screenshot('failure')}"

    def sign_in(self, ui: str, password: str) -> None:
        self.visit(ui)
        self.expect(EC.element_to_be_clickable((By.NAME, "username")), "the sign-in form").send_keys("admin")
        self.driver.find_element(By.NAME, "password").send_keys(password)
        self.driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        self.expect(EC.presence_of_element_located((By.CSS_SELECTOR, "[data-testid=nav-dags-link]")), "the UI after signing in")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip(f"{CHROMIUM} or {CHROMEDRIVER} missing: install Debian's chromium and chromium-driver (`make setup` does)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    # the driver named, so that Selenium does not run its manager, which would look for one online
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield Browser(driver, shots)
    finally:
        driver.quit()


@pytest.fixture
def signed_in(browser: Browser, demo: Demo) -> Browser:
    browser.sign_in(demo.ui, admin_password(demo.stack.home))
    return browser


def readme_image(shot: Path, name: str) -> None:
    """A README picture from ``shot``: reduced to 64 colours (a UI screenshot has few), a fraction of the bytes."""
    if README_IMAGES:
        from PIL import Image

        with Image.open(shot) as image:
            image.convert("RGB").quantize(colors=64).save(Path(README_IMAGES) / name, optimize=True)


def task_page(demo: Demo, task_id: str, map_index: int) -> str:
    mapped = f"/mapped/{map_index}" if map_index >= 0 else ""
    return f"{demo.ui}dags/{DAG_ID}/runs/{quote(demo.run_id)}/tasks/{task_id}{mapped}"


def counts_by_task_instance(demo: Demo) -> dict[tuple[str, int], dict[str, dict]]:
    """``counts.<shard>`` XComs of the run's first instance of each task, from the REST API: what the UI must show."""
    with airflow_api(demo.ui, demo.stack.home) as api:
        entries = api.get(f"dags/{DAG_ID}/dagRuns/{demo.run_id}/taskInstances/~/xcomEntries", params={"limit": 1000})
        found: dict[tuple[str, int], dict[str, dict]] = {}
        for entry in entries.raise_for_status().json()["xcom_entries"]:
            if entry["key"].startswith("counts.") and entry["map_index"] <= 0:
                path = f"dags/{DAG_ID}/dagRuns/{demo.run_id}/taskInstances/{entry['task_id']}/xcomEntries/{entry['key']}"
                value = api.get(path, params={"map_index": entry["map_index"]}).raise_for_status().json()["value"]
                found.setdefault((entry["task_id"], entry["map_index"]), {})[entry["key"]] = value
    return found


def xcom_row_shows(key: str, texts: list[str]) -> Callable[[WebDriver], bool]:
    """A wait condition: the XCom table's row of ``key`` shows each of ``texts``."""
    row = (By.XPATH, f"//tr[td[@data-testid='table-cell-key'][normalize-space()='{key}']]")
    return lambda driver: all(text in driver.find_element(*row).text for text in texts)


def test_the_ui_shows_the_demo_run_and_the_counts_of_each_task(signed_in: Browser, demo: Demo) -> None:
    browser = signed_in
    browser.visit(f"{demo.ui}dags/{DAG_ID}")
    grid_cell = f"[data-testid='grid-{demo.run_id}-release']"
    browser.expect(EC.presence_of_element_located((By.CSS_SELECTOR, grid_cell)), f"the run {demo.run_id} in the grid")
    browser.screenshot("dag")
    browser.visit(f"{demo.ui}dags/{DAG_ID}/runs/{quote(demo.run_id)}")
    badge = (By.CSS_SELECTOR, "[data-testid=header-card] [data-testid=state-badge]")
    browser.expect(EC.text_to_be_present_in_element(badge, "Success"), f"run {demo.run_id} marked Success")
    browser.screenshot("run")

    expected = counts_by_task_instance(demo)
    assert {task for task, _ in expected} >= {
        "crawl",
        "extract",
        "align_documents",
        "align_sentences",
        "score",
        "classify_outputs",  # the classifier runs once for every shard; each shard's counts show here
        "gate",
    }
    for (task_id, map_index), counts in expected.items():
        browser.visit(task_page(demo, task_id, map_index) + "/xcom")
        browser.expect(
            EC.element_to_be_clickable((By.CSS_SELECTOR, "[data-testid=expand-all-button]")), "XCom's expand-all"
        ).click()
        # the pointer leaves the button, whose tooltip would cover the values in the screenshot
        ActionChains(browser.driver).move_to_element(
            browser.driver.find_element(By.CSS_SELECTOR, "[data-testid=table-list]")
        ).perform()
        for key, value in counts.items():
            shown = [f'"in": {value["in"]}', f'"kept": {value["kept"]}']
            browser.expect(xcom_row_shows(key, shown), f"{task_id} {key} {shown}")
        shot = browser.screenshot(f"xcom-{task_id}")
        if task_id == "gate":
            readme_image(shot, "airflow-ui.png")


def test_a_gate_task_links_to_its_data_docs(signed_in: Browser, demo: Demo) -> None:
    browser = signed_in
    browser.visit(task_page(demo, "gate", -1) + "/details")
    link = browser.expect(EC.element_to_be_clickable((By.LINK_TEXT, "Data Docs")), "the gate task's Data Docs button")
    browser.screenshot("gate-details")
    link.click()
    browser.expect(lambda driver: "/bitextflow/data-docs/" in driver.current_url, "the Data Docs route")
    browser.expect(EC.title_contains("Data Docs"), "the Data Docs index page")
    browser.screenshot("data-docs")
    # the index lists its validations in a table its scripts draw from a CDN, which the browser does not reach;
    # the validation page itself is plain HTML
    validation = re.search(r"'_table_row_link_path': '([^']+)'", browser.driver.page_source)
    assert validation, browser.failure("no validation result listed on the Data Docs index")
    browser.visit(browser.driver.current_url.rsplit("/", 1)[0] + "/" + validation.group(1))
    for text in ("Expectation Suite: sentence_pairs", "Status: Succeeded"):
        browser.expect(EC.text_to_be_present_in_element((By.TAG_NAME, "body"), text), f"{text!r} on the validation page")
    browser.screenshot("validation")


def test_the_release_task_opens_its_report_whose_gate_links_open_their_data_docs(signed_in: Browser, demo: Demo) -> None:
    browser = signed_in
    browser.visit(task_page(demo, "release", -1) + "/details")
    link = browser.expect(EC.element_to_be_clickable((By.LINK_TEXT, "Release report")), "the release task's report button")
    link.click()
    browser.expect(lambda driver: "/bitextflow/reports/" in driver.current_url, "the report route")
    browser.expect(EC.title_contains("bitextflow release en-es"), "the report, served by the API server")
    gates = browser.driver.find_elements(By.XPATH, "//h2[normalize-space()='Quality gates']/following-sibling::table[1]//tr[td]")
    names = [row.find_element(By.XPATH, "td[1]").text for row in gates]
    assert {"documents", "sentence_pairs"} <= set(names), browser.failure(f"gates in the report: {names}")
    browser.screenshot("report-served")
    row = gates[names.index("sentence_pairs")]
    row.find_element(By.LINK_TEXT, "Data Docs").click()
    browser.expect(lambda driver: "/bitextflow/data-docs/" in driver.current_url, "the gate's Data Docs, from the report")
    browser.expect(EC.title_contains("Data Docs"), "the Data Docs index page")
    browser.screenshot("report-data-docs")


def test_the_release_report_opens_in_a_browser(browser: Browser, demo: Demo) -> None:
    later = subprocess.run(
        [str(BIN / "bitextflow-local"), "report", "--pair", "en-es"],
        env={**demo.stack.env, **env_file(demo.stack.state / "services.env")}, capture_output=True, text=True,
    )  # fmt: skip
    assert later.returncode == 0 and later.stdout.strip() == demo.report_uri, later.stdout + later.stderr
    browser.visit(demo.report_uri)
    browser.expect(EC.title_contains("bitextflow release en-es"), "the report's title")
    headings = [heading.text for heading in browser.driver.find_elements(By.TAG_NAME, "h2")]
    assert set(REPORT_SECTIONS) <= set(headings), browser.failure(f"sections {REPORT_SECTIONS} not all in {headings}")
    plots = browser.driver.find_elements(By.TAG_NAME, "img")
    drawn = browser.driver.execute_script("return arguments[0].map(img => img.complete && img.naturalWidth > 0)", plots)
    assert plots and all(drawn), browser.failure(f"plots drawn: {drawn}")
    summary = browser.driver.find_element(By.XPATH, "//tr[td[1][normalize-space()='sentence pairs']]/td[2]").text
    assert summary == str(demo.sentence_pairs), browser.failure(
        f"summary says {summary} sentence pairs, the release {demo.sentence_pairs}"
    )
    readme_image(browser.screenshot("report"), "release-report.png")


#: the pairs the escaping test publishes: what a hostile page could put in a release
HOSTILE_TEXTS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


def evaluation_page(demo: Demo, version: int, size: int = DEFAULT_SAMPLE_SIZE) -> str:
    return f"{demo.ui}bitextflow/evaluation/bitextflow/en-es?version={version}&size={size}"


def demo_version(demo: Demo) -> int:
    store = ObjectStore.from_env("bitextflow", demo.stack.client_env())
    (info,) = [info for info in list_releases(store, "en-es") if info.run_id == demo.run_id]
    return info.version


def progress_changed(before: str) -> Callable[[WebDriver], str | bool]:
    return lambda driver: (text := driver.find_element(By.ID, "progress").text) != before and text


def test_a_release_is_judged_in_the_browser_with_one_key_a_pair(signed_in: Browser, demo: Demo) -> None:
    """docs/evaluation.md: the page of the demo's release, 20 pairs labelled from the keyboard, the progress and the
    estimate changing with each; the labels are stored as the signed-in user's."""
    browser = signed_in
    version = demo_version(demo)
    browser.visit(f"{demo.ui}bitextflow/evaluation/")
    browser.expect(EC.element_to_be_clickable((By.LINK_TEXT, f"v{version}")), "the release in the index").click()
    browser.expect(lambda driver: driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready"), "the sample")
    progress = browser.driver.find_element(By.ID, "progress").text
    assert progress.startswith("labelled 0 of "), browser.failure(progress)
    assert "no pair judged yet" in browser.driver.find_element(By.ID, "overall").text
    estimates = set()
    for n, key in enumerate("gggbgggugggggbgggggg", start=1):
        shown = browser.driver.find_element(By.ID, "text_a").text
        ActionChains(browser.driver).send_keys(key).perform()
        browser.expect(
            lambda driver, n=n: driver.find_element(By.ID, "progress").text.startswith(f"labelled {n} of "), f"{n} labelled"
        )
        browser.expect(
            lambda driver, s=shown, last=n == 20: last or driver.find_element(By.ID, "text_a").text != s, "the next pair"
        )
        # the estimate follows each stored label (the requests go one after the other)
        browser.expect(
            lambda driver, n=n: f"{n} labelled by anyone" in driver.find_element(By.ID, "progress").text, f"label {n} stored"
        )
        estimates.add(browser.driver.find_element(By.ID, "overall").text)
    overall = browser.driver.find_element(By.ID, "overall").text
    assert re.search(r"precision 0\.\d{3} \(95% interval 0\.\d{3}-[01]\.\d{3}\); good 17, bad 2, not sure 1", overall), (
        browser.failure(overall)
    )
    assert len(estimates) > 2 and browser.driver.find_element(By.ID, "status").text == "", browser.failure(str(estimates))
    rows = browser.driver.find_elements(By.CSS_SELECTOR, "#per_band tbody tr, #per_site tbody tr, #curve tbody tr")
    assert len(rows) >= 3, browser.failure("per band, per site and curve rows")
    readme_image(browser.screenshot("evaluation"), "evaluation.png")
    store = ObjectStore.from_env("bitextflow", demo.stack.client_env())
    (release,) = [info for info in list_releases(store, "en-es") if info.version == version]
    labels = read_labels(store, release)
    assert len(labels) == 20 and {label.annotator for label in labels} == {"admin"}


def test_a_pair_holding_markup_is_shown_as_text(signed_in: Browser, demo: Demo) -> None:
    """A release whose pairs hold a script and an image with an onerror handler (published beside the demo's, as a
    later version of en-es): the page shows those characters and runs nothing of them."""
    browser = signed_in
    store = ObjectStore.from_env("bitextflow", demo.stack.client_env())
    frame = pd.DataFrame({
        "url_a": ["https://a.example/en/1", "https://a.example/en/2"], "url_b": ["https://a.example/es/1", "https://a.example/es/2"],
        "lang_a": "en", "lang_b": "es", "text_a": list(HOSTILE_TEXTS), "text_b": list(reversed(HOSTILE_TEXTS)),
        "alignment_score": [0.9, 0.8], "margin_score": [1.2, 1.1], "domain_relevance": [0.5, 0.5],
        "rule_tags": "", "domain_terms": "", "pair_hash": ["hostile-1", "hostile-2"],
    })  # fmt: skip
    release = publish_release(store, "en-es", frame, [], "manual__evaluation-escaping", None)
    browser.visit(evaluation_page(demo, release.version, size=2))
    browser.expect(lambda driver: driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready"), "the sample")
    shown = {browser.driver.find_element(By.ID, side).text for side in ("text_a", "text_b")}
    assert shown == set(HOSTILE_TEXTS), browser.failure(f"shown: {shown}")
    assert not browser.driver.find_elements(By.CSS_SELECTOR, "#pair img, #pair script"), browser.failure("markup in the page")
    ActionChains(browser.driver).send_keys("g").perform()
    browser.expect(lambda driver: "1 labelled by anyone" in driver.find_element(By.ID, "progress").text, "the label stored")
    shown = {browser.driver.find_element(By.ID, side).text for side in ("text_a", "text_b")}
    assert shown == set(HOSTILE_TEXTS), browser.failure(f"shown: {shown}")
    alerts = browser.driver.execute_script("return typeof window.alert === 'function' && document.querySelectorAll('img').length")
    assert alerts == 0, browser.failure("an img element on the page")
    browser.screenshot("evaluation-escaped")
