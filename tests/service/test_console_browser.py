"""The console in a real headless browser: Debian's chromium driven by chromium-driver.

A flowserve process serves the bundled models with a bearer token; the browser signs in
through the login form, then checks each view: the models list, the digits graph (node
counts computed here from the graph endpoint, before and after expanding a name scope, and
an op's details on hover), a prediction from the try-it form, and the traffic view.
Screenshots go to the test's tmp dir. Skipped where chromium or its driver is missing.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from service.config import default_model_repository

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.common.exceptions import (  # noqa: E402
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
    "chromium-driver; .ci/run installs them)",
)

TOKEN = "console-test-token"
# A zero from the digits test set (README's example); the model answers class 0.
ZERO = [0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0, 0, 3, 15, 2, 0, 11, 8, 0, 0, 4]
ZERO += [12, 0, 0, 8, 8, 0, 0, 5, 8, 0, 0, 9, 8, 0, 0, 4, 11, 0, 1, 12, 7, 0, 0, 2, 14, 5]
ZERO += [10, 12, 0, 0, 0, 0, 6, 13, 10, 0, 0, 0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _flowserve_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "flowserve")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "service"]


def _get(base: str, path: str):
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, json.loads(resp.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    log = open(tmp_path_factory.mktemp("console") / "server.log", "w+")
    proc = subprocess.Popen(
        _flowserve_command()
        + ["--model-repository", default_model_repository(), "--host", "127.0.0.1"]
        + ["--port", str(port), "--poll-interval", "0", "--auth-token", TOKEN]
        + ["--enable-batching", "--grpc-port", "0"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise AssertionError(f"flowserve exited with {proc.returncode}: {log.read()}")
        try:
            if _get(base, "/v1/models/digits")[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("flowserve did not start")
        time.sleep(0.2)
    yield base
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _wait(driver, condition, what, timeout=30):
    # The console re-renders views as data arrives: an element found may go stale.
    ignored = (NoSuchElementException, StaleElementReferenceException)
    wait = WebDriverWait(driver, timeout, ignored_exceptions=ignored)
    return wait.until(lambda d: condition(d), message=what)


def _severe(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _top_level_count(ops: list[dict]) -> int:
    """Nodes drawn with every scope collapsed: one per first name component."""
    return len({op["name"].split("/")[0] for op in ops})


def _expanded_count(ops: list[dict], scope: str) -> int:
    """Nodes drawn after expanding top-level ``scope``: the others, and one per second
    name component inside it (an op named like the scope is drawn inside it)."""
    inside = {
        op["name"].split("/")[1] if "/" in op["name"] else op["name"]
        for op in ops
        if op["name"] == scope or op["name"].startswith(scope + "/")
    }
    return _top_level_count(ops) - 1 + len(inside)


def test_console_in_a_browser(server, browser, tmp_path):
    d = browser
    d.get(server + "/console")
    _wait(d, lambda d: d.current_url.endswith("/console/login"), "the login form")
    d.find_element(By.NAME, "token").send_keys(TOKEN)
    d.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    # Models: the bundled models, available, with their signatures.
    # Elements are read inside waits: a view re-rendered between finding and reading
    # them makes them stale, and the wait reads them again.
    bundled = {m["name"] for m in _get(server, "/console/api/models")[1]["models"]}
    assert {"digits", "half_plus_two"} <= bundled
    cards = ".card.model"
    _wait(
        d,
        lambda d: (
            {c.get_attribute("data-model") for c in d.find_elements(By.CSS_SELECTOR, cards)}
            == bundled
        ),
        f"a model card for each of {sorted(bundled)}",
    )
    states = "tr[data-model=digits] .state"
    _wait(
        d,
        lambda d: [s.text for s in d.find_elements(By.CSS_SELECTOR, states)] == ["AVAILABLE"],
        "digits AVAILABLE",
    )
    assert "serving_default (default)" in d.page_source
    d.save_screenshot(str(tmp_path / "models.png"))

    _unload_and_load(d)
    _check_graph(d, server, tmp_path)
    _check_try_it(d, server, tmp_path)
    _check_traffic(d, server, tmp_path)
    assert _severe(d) == []
    print("screenshots in", tmp_path, file=sys.stderr)


def _unload_and_load(d):
    # Unload and load again with the buttons (the repository API).
    def hpt_states(d):
        rows = d.find_elements(By.CSS_SELECTOR, "tr[data-model=half_plus_two] .state")
        return [r.text for r in rows]

    def click(label):
        def find_and_click(d):
            card = d.find_element(By.CSS_SELECTOR, ".card.model[data-model=half_plus_two]")
            (button,) = [b for b in card.find_elements(By.TAG_NAME, "button") if b.text == label]
            button.click()
            return True

        _wait(d, find_and_click, f"the {label} button")

    click("Unload")
    _wait(d, lambda d: hpt_states(d) == ["UNLOADED"], "half_plus_two unloaded")
    click("Load")
    _wait(d, lambda d: hpt_states(d) == ["AVAILABLE"], "half_plus_two loaded again")


def _check_graph(d, server, tmp_path):
    # Graph: the digits graph with every scope collapsed, then "hidden" expanded.
    _, graph = _get(server, "/v1/models/digits/versions/1/graph")
    d.get(server + "/console/#graph/digits/1")
    nodes = "#graph svg g.node"
    want = _top_level_count(graph["ops"])
    _wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, nodes)) == want, f"{want} nodes")
    assert d.find_element(By.ID, "graph").get_attribute("data-node-count") == str(want)
    d.find_element(By.CSS_SELECTOR, 'g.node.scope[data-name="hidden"]').click()
    want = _expanded_count(graph["ops"], "hidden")
    _wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, nodes)) == want, f"{want} nodes")
    assert d.find_elements(By.CSS_SELECTOR, 'g.cluster[data-scope="hidden"]')
    matmul = d.find_element(By.CSS_SELECTOR, 'g.node.op[data-name="hidden/MatMul"]')
    ActionChains(d).move_to_element(matmul).perform()
    want_text = ("MatMul", "float32 [?, 64]", "transpose_a")
    _wait(
        d,
        lambda d: all(t in d.find_element(By.CSS_SELECTOR, ".fg-tooltip").text for t in want_text),
        f"the op's details on hover: {want_text}",
    )
    d.save_screenshot(str(tmp_path / "graph.png"))


def _check_try_it(d, server, tmp_path):
    # Try it: a form from the signature; a zero is classified as 0.
    d.get(server + "/console/#try/digits/1")
    area = _wait(d, lambda d: d.find_element(By.CSS_SELECTOR, "textarea[name=images]"), "form")
    d.execute_script("arguments[0].value = arguments[1];", area, json.dumps([ZERO]))
    d.find_element(By.ID, "try-submit").click()
    out = _wait(d, lambda d: d.find_element(By.ID, "try-response"), "the prediction")
    response = json.loads(out.text)
    assert response["outputs"]["classes"] == [0]
    assert len(response["outputs"]["probabilities"][0]) == 10
    latency = d.find_element(By.ID, "try-latency").text
    assert latency.startswith("HTTP 200 in ") and " ms" in latency
    d.save_screenshot(str(tmp_path / "try.png"))


def _check_traffic(d, server, tmp_path):
    # Traffic: the prediction shows up per model version, with a batch-size histogram.
    d.get(server + "/console/#traffic")
    row = "#traffic tr[data-model=digits][data-version='1']"
    _wait(
        d,
        lambda d: (
            "digits v1" in d.find_element(By.CSS_SELECTOR, row).text
            and d.find_elements(By.CSS_SELECTOR, row + " .bars div")
        ),
        "the digits v1 row with its batch-size bars",
    )
    # From the second poll on, the rate columns hold numbers (requests per second).
    rate = "#traffic tr[data-model=digits][data-version='1'] td:nth-child(2)"
    _wait(d, lambda d: d.find_element(By.CSS_SELECTOR, rate).text == "0.00", "a live rate")
    d.save_screenshot(str(tmp_path / "traffic.png"))


def test_offline_html_of_a_graph_with_thousands_of_ops(browser, tmp_path):
    """``render_html`` (what ``python -m engine inspect --html`` writes) in the browser: a
    graph of 3,000+ ops in nested name scopes draws one box per top-level scope, and
    expanding one draws its units inside it."""
    import engine as tf
    from engine import graph_inspection, graph_view

    g = tf.Graph()
    with g.as_default():
        h = tf.placeholder(tf.float32, [None, 8], name="x")
        for block in range(30):
            with tf.name_scope(f"block{block}"):
                for unit in range(25):
                    with tf.name_scope(f"unit{unit}"):
                        h = tf.nn.relu(h * 1.01 + 0.5)
    doc = graph_inspection.describe_graph(g)
    assert doc["op_count"] > 3000
    page = tmp_path / "large.html"
    page.write_text(graph_view.render_html(doc, "large"), encoding="utf-8")
    d = browser
    d.get(page.as_uri())
    nodes = "#graph svg g.node"
    want = _top_level_count(doc["ops"])
    assert want == 31
    _wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, nodes)) == want, f"{want} nodes")
    d.find_element(By.CSS_SELECTOR, 'g.node.scope[data-name="block3"]').click()
    want = _expanded_count(doc["ops"], "block3")
    _wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, nodes)) == want, f"{want} nodes")
    # Its title collapses it again.
    d.find_element(By.CSS_SELECTOR, 'g.cluster[data-scope="block3"] text').click()
    _wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, nodes)) == 31, "collapsed again")
    d.save_screenshot(str(tmp_path / "large.png"))
    assert _severe(d) == []
