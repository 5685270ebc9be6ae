"""`minigrad lab`: the learning pages in a local browser, every number computed by minigrad.

    audit.py   page 1, the vocabulary bridge audit (predict, then the ledger, drawing and checks)
    steps.py   page 2, steps over time (optimizers and decay modes on a rare and a frequent row)
    answer.py  page 3, check an answer (the lesson checks' diagnosis)
    request_params.py  reading and validating every parameter an HTTP request sends
    server.py  the HTTP server (standard library, loopback only) and static/ (HTML, JS, CSS)
"""
