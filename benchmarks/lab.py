"""Server time of each `minigrad lab` endpoint at the default sizes: median and 95th percentile;
then the steps page at its largest settings: how long each chunk takes to come back.

The server runs in this process on 127.0.0.1 (a free port); each request goes over HTTP like
the browser's, and the server reports its own compute time in a Server-Timing header (the time
minigrad spends answering, without the network). The endpoints take turns, round after round,
so a busy moment on the machine lands on all of them alike. Targets: every endpoint's p95 at
most 35 ms at low load; the largest steps chunk answered within 1 s (the server ends a chunk
after 0.4 s of computing, so Stop works within a second).

    python benchmarks/lab.py              # 40 rounds
    python benchmarks/lab.py --rounds 10  # quicker
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import threading
import time

from minigrad.learn.lab.server import LabServer, warm_up

TARGET_P95_MS = 35.0
CHUNK_TARGET_MS = 1000.0
LARGEST = {"vocab_size": 2000, "width": 64, "batch": 256, "steps": 5000, "chunk": 200}


def call(port: int, method: str, path: str, body: dict | None = None) -> tuple[dict, float, float]:
    """(the JSON answer, server compute ms, round-trip ms)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = None if body is None else json.dumps(body).encode()
    headers = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"}
    started = time.perf_counter()
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    payload = json.loads(response.read())
    round_trip = 1000 * (time.perf_counter() - started)
    connection.close()
    if response.status != 200:
        raise SystemExit(f"{method} {path} answered {response.status}: {payload}")
    timing = response.getheader("Server-Timing", "compute;dur=nan")
    return payload, float(timing.split("dur=")[1]), round_trip


def endpoints(port: int) -> dict[str, callable]:
    """Each endpoint as the page calls it, at the default controls."""
    def prediction(mode: str) -> str:
        return call(port, "POST", "/api/predict", {"mode": mode, "layout": "one shared row",
                                                   "larger": "lookup"})[0]["id"]

    def steps_next():  # a fresh run each time (its start is timed on its own line)
        run = call(port, "POST", "/api/steps/start", {})[0]["run"]
        return call(port, "POST", "/api/steps/next", {"run": run})

    predict = {"mode": "tied", "layout": "one shared row", "larger": "lookup"}

    ids = {mode: prediction(mode) for mode in ("untied", "tied")}
    return {
        "GET /api/vocab": lambda: call(port, "GET", "/api/vocab"),
        "POST /api/predict": lambda: call(port, "POST", "/api/predict", predict),
        "POST /api/audit (untied)": lambda: call(port, "POST", "/api/audit", {"mode": "untied",
                                                                              "prediction": ids["untied"]}),
        "POST /api/audit (tied)": lambda: call(port, "POST", "/api/audit", {"mode": "tied",
                                                                            "prediction": ids["tied"]}),
        "POST /api/steps/start": lambda: call(port, "POST", "/api/steps/start", {}),
        "POST /api/steps/next (10 steps x 2 models)": steps_next,
        "POST /api/answer/question": lambda: call(port, "POST", "/api/answer/question", {}),
        "POST /api/answer/check": lambda: call(port, "POST", "/api/answer/check",
                                               {"answer": "0.1, 0.2, 0.3, 0.4"}),
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def blas() -> str:
    """numpy's BLAS as threadpoolctl sees it: library, kernel, threads."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    described = [f"{p['internal_api']} {p.get('architecture', '?')} x{p['num_threads']}" for p in pools]
    return ", ".join(described) or "none"


def largest_chunks(port: int, chunks: int) -> tuple[float, list[float]]:
    """(ms to start the largest run, ms round trip of each of its first `chunks` chunks)."""
    started = time.perf_counter()
    run = call(port, "POST", "/api/steps/start", LARGEST)[0]["run"]
    start_ms = 1000 * (time.perf_counter() - started)
    return start_ms, [call(port, "POST", "/api/steps/next", {"run": run})[2] for _ in range(chunks)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--chunks", type=int, default=5, help="chunks of the largest run to time")
    args = parser.parse_args()
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if variable in os.environ:
            print(f"note: {variable}={os.environ[variable]} is set and may make numpy's BLAS pick a "
                  "slower kernel; see docs/performance.md")
    load_before = os.getloadavg()
    server = LabServer(port=0)  # caps BLAS at one thread while it is open, as `minigrad lab` does
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kernel = blas()
    warm_up()
    calls = endpoints(server.port)
    compute = {name: [] for name in calls}
    trips = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, fn in calls.items():
            _, ms, trip = fn()
            compute[name].append(ms)
            trips[name].append(trip)
    start_ms, chunk_ms = largest_chunks(server.port, args.chunks)
    server.shutdown()
    server.server_close()
    load = os.getloadavg()
    print(f"minigrad lab endpoints, {args.rounds} rounds on {os.cpu_count()} cores; load average "
          f"(1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, after "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"BLAS: {kernel}")
    print(f"server compute time in ms (target: p95 at most {TARGET_P95_MS:.0f} at low load)")
    print(f"{'endpoint':44s} {'median':>8s} {'p95':>8s} {'round trip median':>18s}")
    worst = 0.0
    for name in calls:
        median, p95 = statistics.median(compute[name]), percentile(compute[name], 0.95)
        worst = max(worst, p95)
        print(f"{name:44s} {median:8.1f} {p95:8.1f} {statistics.median(trips[name]):18.1f}")
    verdict = "within" if worst <= TARGET_P95_MS else "OVER"
    print(f"slowest p95 {worst:.1f} ms: {verdict} the {TARGET_P95_MS:.0f} ms target")
    sizes = ", ".join(f"{k} {v}" for k, v in LARGEST.items())
    print(f"\nthe largest steps run ({sizes}): start {start_ms:.0f} ms; chunk round trips "
          + " ".join(f"{ms:.0f}" for ms in chunk_ms) + " ms")
    verdict = "within" if max(chunk_ms) <= CHUNK_TARGET_MS else "OVER"
    print(f"slowest chunk {max(chunk_ms):.0f} ms: {verdict} the {CHUNK_TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
