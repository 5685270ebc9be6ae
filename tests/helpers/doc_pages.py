"""Run a docs page: its python blocks in order, each followed by the text block it must print."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def run_page(name: str, capsys) -> int:
    """Exec every ```python block of docs/<name> in one namespace and check that each ```text
    block is exactly what the python block before it printed. Returns how many python blocks ran."""
    page = (DOCS / name).read_text()
    blocks = re.findall(r"```(python|text)\n(.*?)```", page, flags=re.S)
    namespace: dict = {}
    capsys.readouterr()  # what the test printed before the page does not count
    for kind, body in blocks:
        if kind == "python":
            exec(compile(body, f"docs/{name}", "exec"), namespace)
        else:
            assert capsys.readouterr().out == body, f"docs/{name}: a printed block differs"
    return sum(kind == "python" for kind, _ in blocks)
