"""Server time of each `minigrad lab` endpoint at the default sizes: median and 95th percentile.

The server runs in this process on 127.0.0.1 (a free port); each request goes over HTTP like
the browser's, and the server reports its own compute time in a Server-Timing header (the time
minigrad spends answering, without the network). The endpoints take turns, round after round,
so a busy moment on the machine lands on all of them alike.

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

TARGET_MS = 100.0


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    server = LabServer(port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    warm_up()
    calls = endpoints(server.port)
    compute = {name: [] for name in calls}
    trips = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, fn in calls.items():
            _, ms, trip = fn()
            compute[name].append(ms)
            trips[name].append(trip)
    server.shutdown()
    server.server_close()
    load = os.getloadavg()
    print(f"minigrad lab endpoints, {args.rounds} rounds, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} on {os.cpu_count()} cores")
    print(f"server compute time in ms (target: under {TARGET_MS:.0f})")
    print(f"{'endpoint':44s} {'median':>8s} {'p95':>8s} {'round trip median':>18s}")
    worst = 0.0
    for name in calls:
        median, p95 = statistics.median(compute[name]), percentile(compute[name], 0.95)
        worst = max(worst, median)
        print(f"{name:44s} {median:8.1f} {p95:8.1f} {statistics.median(trips[name]):18.1f}")
    verdict = "under" if worst < TARGET_MS else "OVER"
    print(f"slowest median {worst:.1f} ms: {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
