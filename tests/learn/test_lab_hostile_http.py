"""The lab's server against hostile or odd HTTP: huge and deeply nested JSON, methods it does not
serve, chunked bodies, bodies that never arrive, many clients at once, clients that hang up.

Every bad request gets a 4xx with a JSON message and the lab's security headers, never a 5xx
or an HTML page, and the server keeps answering afterwards."""

import http.client
import json
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from lab_server import lab_process, serving_lab

from minigrad.learn.lab.server import SECURITY_HEADERS, LabServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
    yield from serving_lab()


def raw_exchange(server, data: bytes, timeout: float = 30) -> bytes:
    """Send raw bytes, read until the server closes or stops sending (the whole answer)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def parse(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, body


def post(server, path: str, raw: bytes, headers: dict | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    sent = {"Host": f"127.0.0.1:{server.port}", "Content-Type": "application/json", **(headers or {})}
    connection.request("POST", path, body=raw, headers=sent)
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    return response.status, response, payload


def assert_json_refusal(status, headers, payload, message=""):
    """A 4xx with a JSON {"error": ...} (naming `message`) and every security header."""
    assert 400 <= status < 500, (status, payload[:300])
    assert headers["content-type"].startswith("application/json"), headers
    for name in SECURITY_HEADERS:
        assert name.lower() in headers, (name, headers)
    error = json.loads(payload)["error"]
    assert message in error, error
    return error


def still_answers(server):
    status, _, payload = post(server, "/api/predict", json.dumps(
        {"mode": "tied", "layout": "one shared row", "larger": "lookup"}).encode())
    assert status == 200, payload


def lowered(response) -> dict[str, str]:
    return {k.lower(): v for k, v in response.getheaders()}


# ---- numbers and nesting ----------------------------------------------------------------------

@pytest.mark.parametrize("path, field", [
    ("/api/audit", "width"), ("/api/audit", "seed"), ("/api/audit", "context"),
    ("/api/vocab", "vocab_size"), ("/api/steps/start", "steps"), ("/api/steps/start", "lr"),
    ("/api/steps/start", "zipf"), ("/api/predict", "number"), ("/api/answer/check", "answer"),
])
@pytest.mark.parametrize("digits", [400, 5000])
def test_a_huge_integer_in_a_numeric_field_is_a_400_naming_it(server, path, field, digits):
    """400 digits overflow float(); 5000 pass Python's int-string limit (4300 digits)."""
    body = {"mode": "untied", "layout": "separate tensors", "larger": "lookup", "vocab": "corpus"}
    text = json.dumps(body)[:-1] + f', "{field}": ' + "9" * digits + "}"
    if path == "/api/vocab":  # a GET: the same number in the query string
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        connection.request("GET", f"/api/vocab?vocab=corpus&{field}=" + "9" * digits,
                           headers={"Host": f"127.0.0.1:{server.port}"})
        response = connection.getresponse()
        status, payload = response.status, response.read()
        connection.close()
    else:
        status, response, payload = post(server, path, text.encode())
    error = assert_json_refusal(status, lowered(response), payload)
    assert field in error or "digits" in error, error
    still_answers(server)


def test_a_huge_integer_inside_a_list_is_refused(server):
    text = '{"answer": [1, 2, 3, ' + "9" * 400 + "]}"
    status, response, payload = post(server, "/api/answer/check", text.encode())
    assert_json_refusal(status, lowered(response), payload, "answer")


@pytest.mark.parametrize("depth", [200, 2000, 20000])
def test_deeply_nested_json_is_refused(server, depth):
    text = '{"context": ' + "[" * depth + "1" + "]" * depth + "}"
    status, response, payload = post(server, "/api/audit", text.encode()[:60000])
    assert_json_refusal(status, lowered(response), payload)
    still_answers(server)


# ---- methods --------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "PUT", "DELETE", "PATCH", "BREW", "GETX"])
def test_methods_not_served_get_a_405_json_with_the_security_headers(server, method):
    answer = raw_exchange(server, f"{method} / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                                  "Connection: close\r\n\r\n".encode())
    status, headers, body = parse(answer)
    assert status == 405 and headers.get("allow") == "GET, POST"
    assert_json_refusal(status, headers, body, "only GET and POST")
    still_answers(server)


def test_connect_gets_a_405_json(server):
    answer = raw_exchange(server, f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\nHost: 127.0.0.1:"
                                  f"{server.port}\r\nConnection: close\r\n\r\n".encode())
    status, headers, body = parse(answer)
    assert status == 405
    assert_json_refusal(status, headers, body, "only GET and POST")


def test_head_gets_a_405_with_the_headers_and_no_body(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("HEAD", "/", headers={"Host": f"127.0.0.1:{server.port}"})
    response = connection.getresponse()
    assert response.read() == b""  # a HEAD answer has no body (RFC 9110)
    connection.close()
    headers = lowered(response)
    assert response.status == 405 and headers["content-type"].startswith("application/json")
    assert all(name.lower() in headers for name in SECURITY_HEADERS)
    still_answers(server)


@pytest.mark.parametrize("request_line", [b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                                          b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n"])
def test_a_malformed_request_line_gets_a_4xx_json(server, request_line):
    status, headers, body = parse(raw_exchange(server, request_line))
    assert_json_refusal(status, headers, body)


# ---- bodies ---------------------------------------------------------------------------------------

def chunked(data: bytes, size: int = 7) -> bytes:
    pieces = [data[i:i + size] for i in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def test_a_chunked_body_is_read_whole(server):
    body = json.dumps({"steps": 3, "chunk": 200}).encode()
    answer = raw_exchange(server, (f"POST /api/steps/start HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                                   "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                                   "Connection: close\r\n\r\n").encode() + chunked(body))
    status, _, payload = parse(answer)
    assert status == 200, payload
    assert json.loads(payload)["steps"] == 3  # not the default 300 that an empty body gives


@pytest.mark.parametrize("chunks, message", [
    (b"zz\r\n{}\r\n0\r\n\r\n", "chunk"),
    (b"%x\r\n" % 70000 + b"x" * 100, "at most 65536 bytes"),
])
def test_a_bad_chunked_body_is_a_4xx(server, chunks, message):
    answer = raw_exchange(server, (f"POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                                   "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                                   "\r\n").encode() + chunks, timeout=20)
    status, headers, body = parse(answer)
    assert_json_refusal(status, headers, body, message)
    still_answers(server)


def test_an_unknown_transfer_encoding_is_refused(server):
    answer = raw_exchange(server, (f"POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                                   "Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n"
                                   "Content-Length: 2\r\n\r\n{}").encode())
    status, headers, body = parse(answer)
    assert_json_refusal(status, headers, body, "Transfer-Encoding")


def test_a_body_shorter_than_its_length_times_out_with_a_4xx():
    lab = LabServer(port=0)
    lab.RequestHandlerClass = type("QuickHandler", (lab.RequestHandlerClass,), {"timeout": 0.5})
    threading.Thread(target=lab.serve_forever, daemon=True).start()
    try:
        head = (f"POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1:{lab.port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        answer = raw_exchange(lab, head.encode() + b"{", timeout=10)
        status, headers, body = parse(answer)
        assert_json_refusal(status, headers, body, "did not arrive")
    finally:
        lab.shutdown()
        lab.server_close()


def test_an_error_before_the_body_is_read_does_not_poison_the_connection(server):
    """Refused before its body is read (wrong type), the connection closes: the unread body is
    never taken for the next request."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    sent = {"Host": f"127.0.0.1:{server.port}", "Content-Type": "text/plain"}
    connection.request("POST", "/api/predict", body=b"GET /etc/passwd HTTP/1.1\r\n\r\n", headers=sent)
    response = connection.getresponse()
    response.read()
    assert response.status == 415 and response.getheader("Connection") == "close"
    connection.close()


# ---- many clients, clients that leave ----------------------------------------------------------------

def test_many_clients_connecting_at_once_are_all_queued():
    """64 clients connect before the server accepts any: the listen backlog holds them all."""
    lab = LabServer(port=0)
    serving = threading.Thread(target=lab.serve_forever, daemon=True)
    try:
        sockets = []
        for _ in range(64):
            sock = socket.socket()
            sock.settimeout(0.5)  # a connection the backlog drops waits >= 1 s for a SYN retry
            sock.connect(("127.0.0.1", lab.port))
            sockets.append(sock)
        serving.start()
        for sock in sockets:
            sock.settimeout(30)
            sock.sendall(f"GET /lab.css HTTP/1.1\r\nHost: 127.0.0.1:{lab.port}\r\nConnection: close\r\n\r\n"
                         .encode())
        for sock in sockets:
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            sock.close()
            assert parse(answer)[0] == 200
    finally:
        if serving.is_alive():
            lab.shutdown()
        lab.server_close()


def test_32_concurrent_clients_all_get_answers(server):
    results = []

    def client():
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        connection.request("GET", "/api/vocab", headers={"Host": f"127.0.0.1:{server.port}"})
        results.append(connection.getresponse().status)
        connection.close()

    threads = [threading.Thread(target=client) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert results == [200] * 32


def abort(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), as a browser tab that is closed mid-request does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_a_client_that_hangs_up_leaves_no_traceback():
    with lab_process() as lab:
        port = lab["port"]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        large = {"steps": 5000, "chunk": 200, "vocab_size": 2000, "width": 64, "batch": 256}
        connection.request("POST", "/api/steps/start", body=json.dumps(large),
                           headers={"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"})
        run = json.loads(connection.getresponse().read())["run"]
        connection.close()
        body = json.dumps({"run": run}).encode()
        for _ in range(3):  # each chunk computes for longer than the client waits
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(f"POST /api/steps/next HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
                         f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            time.sleep(0.05)
            abort(sock)
        time.sleep(2)  # the server finishes computing and writes into the closed sockets
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/api/vocab", headers={"Host": f"127.0.0.1:{port}"})
        assert connection.getresponse().status == 200  # and it keeps answering
        connection.close()
    err = lab["err"]
    assert "Traceback" not in err and "Error" not in err, err
    assert len(err.splitlines()) <= 3, err  # at most one line per client that left
