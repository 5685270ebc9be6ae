"""The lab's HTTP server: the standard library's ThreadingHTTPServer, on 127.0.0.1 only.

Why the standard library: the lab serves three static files and a handful of JSON endpoints to
one local browser; `http.server` does that with no new dependency (so `minigrad lab` needs the
same install as the tour) and every security rule below is a few visible lines here.

Rules every request passes before a page function runs:
- Host must name the loopback interface (127.0.0.1, localhost or [::1], with our port): a page on
  another site that re-points its DNS name at 127.0.0.1 (DNS rebinding) is refused.
- A POST must come from our own origin: a foreign Origin (or a cross-site Sec-Fetch-Site) is
  refused, and the body must be JSON of bounded size (a cross-site form cannot send that).
- Bad input is answered with a 4xx and a message the page shows; nothing sent is evaluated.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from minigrad.learn.kit import blas_thread_cap, cap_blas_threads
from minigrad.learn.lab import answer, audit, steps
from minigrad.learn.lab import request_params as P
from minigrad.learn.lab.pieces import PieceBook
from minigrad.learn.lab.request_params import BadRequest

HOST = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MAX_BODY = 64 * 1024
ONLY_GET_AND_POST = "only GET and POST are served here"
STATIC = {  # path -> (file in minigrad/learn/lab/static, content type)
    "/": ("index.html", "text/html; charset=utf-8"),
    "/lab.js": ("lab.js", "text/javascript; charset=utf-8"),
    "/lab.css": ("lab.css", "text/css; charset=utf-8"),
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                               "script-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                               "form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class LabState:
    """What the server remembers between requests: predictions and step runs (both bounded)."""

    def __init__(self) -> None:
        self.predictions = audit.PredictionBook()
        self.pieces = PieceBook()
        self.runs = steps.RunBook(pieces=self.pieces)

    def routes(self) -> dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            ("GET", "/api/vocab"): audit.vocabulary,
            ("GET", "/api/pieces"): lambda body: {"pieces": self.pieces.status()},
            ("POST", "/api/predict"): lambda body: asdict(self.predictions.commit(body)),
            ("POST", "/api/audit"): lambda body: audit.audit(body, self.predictions, self.pieces),
            ("POST", "/api/steps/start"): self.runs.start,
            ("POST", "/api/steps/next"): self.runs.advance,
            ("POST", "/api/answer/question"): answer.question,
            ("POST", "/api/answer/check"): answer.check,
        }


class LabHandler(BaseHTTPRequestHandler):
    server: LabServer
    compute_ms: float | None  # the last route's time, sent once as Server-Timing (set when one ran)
    server_version = "minigrad-lab"
    sys_version = ""
    timeout = 30  # seconds a client may take to send its request (then 408 and the connection closes)
    default_request_version = "HTTP/1.0"  # answer even a garbled request line with headers, not as HTTP/0.9

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except ConnectionError:  # the browser went away (a tab closed, a page reloaded): normal
            self.close_connection = True
            self.log_message("the client closed the connection before the answer was sent")

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, headers too long, a method with no
        do_<METHOD>) answered as ours are: JSON with the lab's headers, then the connection closes."""
        message = (message or HTTPStatus(code).phrase)[:200]  # it may quote a 64 KiB request line
        if code == HTTPStatus.NOT_IMPLEMENTED:  # http.server's answer to a method we do not serve
            code, message = HTTPStatus.METHOD_NOT_ALLOWED, f"{self.command[:40]}: {ONLY_GET_AND_POST}"
        elif code >= 500:  # an HTTP version we do not speak: the client's request is at fault
            code = HTTPStatus.BAD_REQUEST
        self.close_connection = True
        self._send_error(code, message)

    # ---- one request ---------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        try:
            payload = self._answer(method)
        except BadRequest as err:
            self._send_error(err.status, str(err))
        except TimeoutError:
            self._send_error(HTTPStatus.REQUEST_TIMEOUT, f"the request body did not arrive within "
                                                         f"{self.timeout} s")
        except ConnectionError:
            raise  # the client left: handle_one_request notes it
        except Exception:  # a bug of ours: say so without a traceback, keep the details in the log
            traceback.print_exc(file=sys.stderr)
            self._send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "the lab failed to compute this; see the "
                             "terminal running `minigrad lab`")
        else:
            if payload is not None:
                self._send_json(HTTPStatus.OK, payload)

    def _answer(self, method: str) -> Any:
        """The JSON answer to a request (None when a static file was sent)."""
        self._refuse_foreign(method)
        url = urlsplit(self.path)
        if method == "GET" and url.path in STATIC:
            self._send_static(*STATIC[url.path])
            return None
        route = self.server.state.routes().get((method, url.path))
        if route is None:
            known = any(path == url.path for _, path in self.server.state.routes())
            raise BadRequest(f"{method} {url.path}: " + ("wrong method" if known else "no such page"),
                             status=405 if known else 404)
        body = dict(parse_qsl(url.query)) if method == "GET" else self._json_body()
        with self.server.compute_lock:
            started = time.perf_counter()
            payload = route(body)
            self.compute_ms = 1000 * (time.perf_counter() - started)
        return payload

    def _refuse_foreign(self, method: str) -> None:
        host = self.headers.get("Host", "")
        if not self.server.is_own_host(host):
            raise BadRequest(f"Host {P.shown(host)} is not this lab's address (only {self.server.url} is "
                             "served: a foreign Host is how DNS rebinding starts)", status=403)
        if method == "GET":
            return
        origin = self.headers.get("Origin")
        if origin is not None and not self.server.is_own_origin(origin):
            raise BadRequest(f"cross-origin request from {P.shown(origin)} refused", status=403)
        if self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            raise BadRequest("cross-site request refused", status=403)

    def _json_body(self) -> Any:
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            raise BadRequest("send the parameters as JSON (Content-Type: application/json)", status=415)
        return P.parse_json(self._read_body())

    def _read_body(self) -> bytes:
        """The request body, whole: Content-Length bytes, or a chunked body (decoded)."""
        encoding = self.headers.get("Transfer-Encoding")
        if encoding is not None:
            if encoding.strip().lower() != "chunked":
                raise BadRequest(f"Transfer-Encoding {P.shown(encoding)} is not accepted (send the body "
                                 "as it is, or chunked)")
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise BadRequest("Content-Length must be a number") from None
        if length < 0 or length > MAX_BODY:
            raise BadRequest(f"the request body must be at most {MAX_BODY} bytes", status=413)
        return self._read_exactly(length)

    def _read_exactly(self, length: int) -> bytes:
        data = self.rfile.read(length)
        if len(data) < length:
            raise BadRequest(f"the request body did not arrive: {len(data)} of {length} bytes")
        return data

    def _read_chunked(self) -> bytes:
        """A `Transfer-Encoding: chunked` body: hexadecimal size, CRLF, that many bytes, CRLF, ...,
        then a chunk of size 0 and optional trailer lines. At most MAX_BODY bytes in all."""
        body = bytearray()
        while True:
            size_line = self.rfile.readline(256).split(b";")[0].strip()  # ";..." : chunk extensions
            if not re.fullmatch(rb"[0-9a-fA-F]{1,8}", size_line):
                raise BadRequest(f"the chunked body is malformed: a chunk size must be hexadecimal, got "
                                 f"{P.shown(size_line.decode('latin-1'))}")
            size = int(size_line, 16)
            if len(body) + size > MAX_BODY:
                raise BadRequest(f"the request body must be at most {MAX_BODY} bytes", status=413)
            if size == 0:
                break
            body += self._read_exactly(size)
            if self.rfile.readline(3).strip():
                raise BadRequest("the chunked body is malformed: a chunk does not end where its size says")
        for _ in range(32):  # trailer lines, up to the blank line that ends the body
            if not self.rfile.readline(8192).strip():
                return bytes(body)
        raise BadRequest("the chunked body is malformed: too many trailer lines")

    # ---- answers -------------------------------------------------------------------------------
    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET, POST")
        if status >= 400:  # a refused request's body may be unread: it must not be taken for the next one
            self.close_connection = True
            self.send_header("Connection", "close")
        if getattr(self, "compute_ms", None) is not None:  # what benchmarks/lab.py reads
            self.send_header("Server-Timing", f"compute;dur={self.compute_ms:.3f}")
            self.compute_ms = None
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer is the headers alone
            self.wfile.write(data)

    def _send_json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload, allow_nan=False).encode("utf-8"), "application/json")

    def _send_error(self, status: int, message: str) -> None:
        self._send_json(int(status), {"error": message})

    def _send_static(self, name: str, content_type: str) -> None:
        # one part per joinpath: Python 3.10's resources take only one
        data = resources.files("minigrad.learn.lab").joinpath("static").joinpath(name).read_bytes()
        self._send(HTTPStatus.OK, data, content_type)


class LabServer(ThreadingHTTPServer):
    """ThreadingHTTPServer bound to 127.0.0.1 (port 0: any free port).

    While it is open numpy's BLAS runs on one thread (MINIGRAD_BLAS_THREADS, as in the lessons):
    the lab's matrices are small, and on a shared or 2-core machine a thread per core makes each
    step several times slower, not faster."""

    daemon_threads = True  # Ctrl-C does not wait for an open keep-alive connection
    request_queue_size = 128  # connections waiting to be accepted (the default 5 resets a busy page's)
    blas_limit: Any = None  # threadpoolctl's limiter while the server is open

    def __init__(self, port: int = 0, verbose: bool = False):
        super().__init__((HOST, port), LabHandler)
        self.state = LabState()
        self.verbose = verbose
        self.blas_limit = cap_blas_threads(extra="lab")
        # One computation at a time: minigrad's grad mode (no_grad) is process-wide, so two
        # requests computing at once could switch gradients off under each other. Threads still
        # let static files and refusals through while a computation runs.
        self.compute_lock = threading.Lock()

    def server_close(self) -> None:
        super().server_close()
        if self.blas_limit is not None:
            self.blas_limit.restore_original_limits()
            self.blas_limit = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Whatever escapes a request's handler: one line, not socketserver's traceback."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            print(f"minigrad lab: a request from {client_address[0]} failed: {error!r}", file=sys.stderr)

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def is_own_host(self, host: str) -> bool:
        name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if not name:
            name, port = host, ""
        return name.lower() in LOOPBACK_NAMES and port in ("", str(self.port))

    def is_own_origin(self, origin: str) -> bool:
        scheme, _, host = origin.partition("://")
        return scheme == "http" and self.is_own_host(host)


def warm_up(state: LabState | None = None) -> None:
    """Load the corpus, start the WebAssembly Graphviz and mark the learner's pieces once, so no
    learner waits for them."""
    if state is not None:
        state.pieces.status()
    audit.corpus_words()
    book = audit.PredictionBook()
    audit.audit({"prediction": book.commit({"mode": "untied", "layout": audit.LAYOUTS[0],
                                            "larger": "lookup"}).id}, book)


def serve(port: int = 0, open_browser: bool = True, verbose: bool = False, out: Any = None) -> int:
    """Run the lab until Ctrl-C. The URL is the first line printed."""
    out = out or sys.stdout
    problem = None
    if not 0 <= port <= 65535:
        problem = f"port {port} is not a port; expected 0 (any free port) to 65535"
    try:
        blas_thread_cap()  # MINIGRAD_BLAS_THREADS, read before anything listens
    except ValueError as err:
        problem = str(err)
    if problem:
        print(f"minigrad lab: {problem}", file=sys.stderr)
        return 2
    try:
        server = LabServer(port, verbose)
    except OSError as err:
        print(f"minigrad lab: cannot listen on {HOST}:{port}: {err.strerror or err} (choose another "
              "--port, or 0 for any free one)", file=sys.stderr)
        return 2  # the port asked for cannot be used: a bad argument
    print(server.url, file=out, flush=True)  # already listening: a browser opened now waits for us
    try:
        print("minigrad lab: preparing (corpus, Graphviz, your pieces) ...", file=out, flush=True)
        warm_up(server.state)
        print("minigrad lab: ready; press Ctrl-C to stop", file=out, flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nminigrad lab: stopped", file=out, flush=True)
    finally:
        server.server_close()
    return 0
