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

from minigrad.learn.lab import answer, audit, steps
from minigrad.learn.lab.params import BadRequest

HOST = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MAX_BODY = 64 * 1024
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
        self.runs = steps.RunBook()

    def routes(self) -> dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            ("GET", "/api/vocab"): audit.vocabulary,
            ("POST", "/api/predict"): lambda body: asdict(self.predictions.commit(body)),
            ("POST", "/api/audit"): lambda body: audit.audit(body, self.predictions),
            ("POST", "/api/steps/start"): self.runs.start,
            ("POST", "/api/steps/next"): self.runs.advance,
            ("POST", "/api/answer/question"): answer.question,
            ("POST", "/api/answer/check"): answer.check,
        }


class LabHandler(BaseHTTPRequestHandler):
    server: LabServer
    server_version = "minigrad-lab"
    sys_version = ""

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._send_error(HTTPStatus.METHOD_NOT_ALLOWED, "only GET and POST are served here")

    do_DELETE = do_PATCH = do_PUT

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    # ---- one request ---------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        try:
            self._refuse_foreign(method)
            url = urlsplit(self.path)
            if method == "GET" and url.path in STATIC:
                self._send_static(*STATIC[url.path])
                return
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
            self._send_json(HTTPStatus.OK, payload)
        except BadRequest as err:
            self._send_error(err.status, str(err))
        except Exception:  # a bug of ours: say so without a traceback, keep the details in the log
            traceback.print_exc(file=sys.stderr)
            self._send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "the lab failed to compute this; see the "
                             "terminal running `minigrad lab`")

    def _refuse_foreign(self, method: str) -> None:
        host = self.headers.get("Host", "")
        if not self.server.is_own_host(host):
            raise BadRequest(f"Host {host!r} is not this lab's address (only {self.server.url} is served: "
                             "a foreign Host is how DNS rebinding starts)", status=403)
        if method == "GET":
            return
        origin = self.headers.get("Origin")
        if origin is not None and not self.server.is_own_origin(origin):
            raise BadRequest(f"cross-origin request from {origin!r} refused", status=403)
        if self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            raise BadRequest("cross-site request refused", status=403)

    def _json_body(self) -> Any:
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            raise BadRequest("send the parameters as JSON (Content-Type: application/json)", status=415)
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise BadRequest("Content-Length must be a number") from None
        if length < 0 or length > MAX_BODY:
            raise BadRequest(f"the request body must be at most {MAX_BODY} bytes", status=413)
        try:
            return json.loads(self.rfile.read(length) or b"{}")
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise BadRequest(f"the request body is not valid JSON: {err}") from None

    # ---- answers -------------------------------------------------------------------------------
    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        if getattr(self, "compute_ms", None) is not None:  # what benchmarks/lab.py reads
            self.send_header("Server-Timing", f"compute;dur={self.compute_ms:.3f}")
            self.compute_ms = None
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload, allow_nan=False).encode("utf-8"), "application/json")

    def _send_error(self, status: int, message: str) -> None:
        self._send_json(int(status), {"error": message})

    def _send_static(self, name: str, content_type: str) -> None:
        data = resources.files("minigrad.learn.lab").joinpath("static", name).read_bytes()
        self._send(HTTPStatus.OK, data, content_type)


class LabServer(ThreadingHTTPServer):
    """ThreadingHTTPServer bound to 127.0.0.1 (port 0: any free port)."""

    daemon_threads = True  # Ctrl-C does not wait for an open keep-alive connection

    def __init__(self, port: int = 0, verbose: bool = False):
        super().__init__((HOST, port), LabHandler)
        self.state = LabState()
        self.verbose = verbose
        # One computation at a time: minigrad's grad mode (no_grad) is process-wide, so two
        # requests computing at once could switch gradients off under each other. Threads still
        # let static files and refusals through while a computation runs.
        self.compute_lock = threading.Lock()

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


def warm_up() -> None:
    """Load the corpus and start the WebAssembly Graphviz once, so no learner waits for it."""
    audit.corpus_words()
    book = audit.PredictionBook()
    audit.audit({"prediction": book.commit({"mode": "untied", "layout": audit.LAYOUTS[0],
                                            "larger": "lookup"}).id}, book)


def serve(port: int = 0, open_browser: bool = True, verbose: bool = False, out: Any = None) -> int:
    """Run the lab until Ctrl-C. The URL is the first line printed."""
    out = out or sys.stdout
    try:
        server = LabServer(port, verbose)
    except OSError as err:
        print(f"minigrad lab: cannot listen on {HOST}:{port}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(server.url, file=out, flush=True)  # already listening: a browser opened now waits for us
    try:
        print("minigrad lab: preparing (corpus, Graphviz) ...", file=out, flush=True)
        warm_up()
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
