"""The lab's HTTP server against 127.0.0.1: every endpoint, bad input (4xx with a message, never a
500), a foreign Host (DNS rebinding), cross-origin POSTs, and `minigrad lab` as a process."""

import http.client
import json
import subprocess
import sys
from pathlib import Path

import pytest
from lab_server import lab_process, serving_lab

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
    yield from serving_lab()


def request(server, method, path, body=None, headers=None, raw=None):
    """(status, headers, parsed JSON or text) of one request; Host is ours unless overridden."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    sent = {"Host": f"127.0.0.1:{server.port}"}
    if data is not None:
        sent["Content-Type"] = "application/json"
    sent.update(headers or {})
    connection.request(method, path, body=data, headers=sent)
    response = connection.getresponse()
    payload = response.read().decode()
    connection.close()
    kind = response.getheader("Content-Type", "")
    return response.status, response, json.loads(payload) if kind.startswith("application/json") else payload


def predict(server, mode):
    status, _, saved = request(server, "POST", "/api/predict",
                               {"mode": mode, "layout": "one shared row", "larger": "lookup", "number": 0.5})
    assert status == 200, saved
    return saved["id"]


def test_static_pages_are_served_with_a_strict_policy(server):
    for path, kind, text in [("/", "text/html", "minigrad lab"), ("/lab.js", "text/javascript", "fetch("),
                             ("/lab.css", "text/css", ":root")]:
        status, response, body = request(server, "GET", path)
        assert status == 200 and response.getheader("Content-Type").startswith(kind) and text in body
        assert "default-src 'self'" in response.getheader("Content-Security-Policy")
        assert response.getheader("X-Frame-Options") == "DENY"


def test_nothing_is_fetched_from_another_site(server):
    for path in ("/", "/lab.js", "/lab.css"):
        body = request(server, "GET", path)[2]
        assert "http://" not in body.replace("http://www.w3.org/2000/svg", "") and "https://" not in body


def test_vocab_predict_and_audit(server):
    status, _, vocab = request(server, "GET", "/api/vocab?vocab=corpus&vocab_size=5")
    assert status == 200 and len(vocab["vocab"]) == 5
    prediction = predict(server, "tied")
    status, _, result = request(server, "POST", "/api/audit", {"mode": "tied", "prediction": prediction})
    assert status == 200
    assert round(result["actual"]["number"], 4) == 0.5799 and "<svg" in result["svg"]
    assert result["prediction"]["id"] == prediction


def test_pieces_says_whose_each_piece_is(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGRAD_EXERCISES", str(tmp_path))  # no copies there: minigrad's, and why
    status, _, answer = request(server, "GET", "/api/pieces")
    assert status == 200
    names = [p["name"] for p in answer["pieces"]]
    assert names == ["Embedding", "CrossEntropy", "tie_weights", "lazy_adamw_rows"]
    assert not any(p["passes"] for p in answer["pieces"])
    assert all("you have not built yours yet" in p["why"] for p in answer["pieces"])


def test_steps_start_and_next(server):
    status, _, started = request(server, "POST", "/api/steps/start", {"steps": 4, "chunk": 3})
    assert status == 200
    first = request(server, "POST", "/api/steps/next", {"run": started["run"]})[2]
    second = request(server, "POST", "/api/steps/next", {"run": started["run"]})[2]
    assert (first["step"], first["done"], second["step"], second["done"]) == (3, False, 4, True)
    status, _, error = request(server, "POST", "/api/steps/next", {"run": started["run"]})
    assert status == 409 and "has finished its 4 steps" in error["error"]


def test_answer_question_and_check(server):
    status, _, question = request(server, "POST", "/api/answer/question", {"mode": "untied"})
    assert status == 200 and question["shape"] == [4]
    status, _, verdict = request(server, "POST", "/api/answer/check", {"answer": "0, 0, 0, 0"})
    assert status == 200 and verdict["verdict"] == "fail" and "all zero" in verdict["diagnosis"]


@pytest.mark.parametrize("method, path, body, status, message", [
    ("POST", "/api/audit", {"mode": "tied"}, 409, "commit a prediction for tied mode"),
    ("POST", "/api/audit", {"mode": "tied", "prediction": "p1", "token": "dog"}, 400, "token: 'dog'"),
    ("POST", "/api/predict", {"mode": "tied", "layout": "?", "larger": "lookup"}, 400, "layout: expected"),
    ("GET", "/api/vocab?width=99", None, 400, "width: 99 is out of range"),
    ("GET", "/api/vocab?context=1,2", None, 400, "context: expected 4 numbers, got 2"),
    ("POST", "/api/steps/start", {"steps": 10**9}, 400, "steps: 1000000000 is out of range"),
    ("POST", "/api/steps/start", {"vocab_size": 10**6}, 400, "vocab_size: 1000000 is out of range"),
    ("POST", "/api/steps/start", {"optimizer": "adam", "decay": "catch_up"}, 400, "needs decoupled"),
    ("POST", "/api/steps/next", {"run": "nope"}, 404, "no step run 'nope'"),
    ("POST", "/api/steps/start", {"pieces": "yes"}, 400, "pieces: expected true or false"),
    ("POST", "/api/audit", {"mode": "untied", "prediction": "p1", "pieces": 1}, 400, "pieces: expected true"),
    ("POST", "/api/answer/check", {"answer": "[[1, 2], [3]]"}, 400, "answer: expected numbers in rows"),
    ("POST", "/api/answer/check", {"answer": "1 2 3"}, 422, "has shape (4,)"),
    ("POST", "/api/answer/check", {"answer": "__import__('os')"}, 400, "answer: could not read the numbers"),
    ("POST", "/api/audit", [1, 2], 400, "the request body must be a JSON object"),
    ("GET", "/api/audit", None, 405, "wrong method"),
    ("GET", "/etc/passwd", None, 404, "no such page"),
    ("GET", "/../pyproject.toml", None, 404, "no such page"),
])
def test_bad_requests_get_a_4xx_and_a_message(server, method, path, body, status, message):
    got, _, payload = request(server, method, path, body)
    assert got == status and message in payload["error"]


def test_malformed_bodies_are_refused(server):
    status, _, payload = request(server, "POST", "/api/predict", raw=b"{not json")
    assert status == 400 and "not valid JSON" in payload["error"]
    status, _, payload = request(server, "POST", "/api/predict", raw=b"x" * 70_000)
    assert status == 413 and "at most 65536 bytes" in payload["error"]
    status, _, payload = request(server, "POST", "/api/predict", raw=b"mode=tied",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415 and "JSON" in payload["error"]


@pytest.mark.parametrize("value", [None, True, -1, 1e308, "1e999", "NaN", [], {}, "x" * 1000, [[1]], "0x10"])
def test_no_parameter_value_causes_a_server_error(server, value):
    for path, field in [("/api/audit", "width"), ("/api/audit", "context"), ("/api/steps/start", "lr"),
                        ("/api/steps/start", "batch"), ("/api/answer/check", "answer"),
                        ("/api/answer/check", "row"), ("/api/predict", "number")]:
        body = {"mode": "untied", "layout": "separate tensors", "larger": "lookup",
                "prediction": predict(server, "untied"), field: value}
        status, _, payload = request(server, "POST", path, body)
        assert status < 500, (path, field, value, payload)
        assert status == 200 or payload["error"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example",
                                  "localhost:1", ""])
def test_a_foreign_host_is_refused(server, host):
    for method, path, body in [("GET", "/", None), ("POST", "/api/predict", {})]:
        status, _, payload = request(server, method, path, body, headers={"Host": host})
        assert status == 403 and "not this lab's address" in payload["error"]


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}", "LOCALHOST:{port}"])
def test_loopback_names_are_served(server, host):
    status, _, _ = request(server, "GET", "/", headers={"Host": host.format(port=server.port)})
    assert status == 200


def test_a_cross_origin_post_is_refused(server):
    body = {"mode": "tied", "layout": "one shared row", "larger": "lookup"}
    for headers in ({"Origin": "http://evil.example"}, {"Origin": f"http://evil.example:{server.port}"},
                    {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        status, _, payload = request(server, "POST", "/api/predict", body, headers=headers)
        assert status == 403 and "refused" in payload["error"]
    own = request(server, "POST", "/api/predict", body, headers={"Origin": f"http://127.0.0.1:{server.port}"})
    assert own[0] == 200


def test_the_server_listens_on_loopback_only(server):
    assert server.server_address[0] == "127.0.0.1"


def test_minigrad_lab_prints_its_url_first_and_stops_on_ctrl_c():
    with lab_process() as lab:
        assert lab["url"].startswith("http://127.0.0.1:") and lab["url"].endswith("/")
        assert lab["port"] > 0 and lab["ready"]
        connection = http.client.HTTPConnection("127.0.0.1", lab["port"], timeout=30)
        connection.request("GET", "/")
        assert connection.getresponse().status == 200
        connection.close()
    assert lab["returncode"] == 0, lab["err"]
    assert "stopped" in lab["out"] and "Traceback" not in lab["err"]


def test_a_busy_port_is_reported(server):
    result = subprocess.run([sys.executable, "-m", "minigrad.cli", "lab", "--port", str(server.port),
                             "--no-browser"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and f"cannot listen on 127.0.0.1:{server.port}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "choose another --port" in result.stderr
