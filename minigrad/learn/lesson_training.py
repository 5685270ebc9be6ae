"""Training pieces more than one lesson uses: the warm-up + cosine learning rate
(`warmup_cosine`, lessons 11 to 13) and a tied table's gradient split by path (`split_paths`,
`classifier_share`: lessons 6 and 10)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import Tensor
from minigrad.tools.ledger import Ledger


def warmup_cosine(step: int, total: int, peak: float) -> float:
    """The learning rate at `step` (0-based) of `total`: linear warm-up over the first 5% of the
    steps, then a cosine decay to peak / 10 at the end (how language models are usually trained)."""
    warm = max(1, total // 20)
    if step < warm:
        return peak * (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return float(peak * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * progress))))


# ---- a tied table's gradient by path (lesson 6) -------------------------------------------------

def split_paths(led: Ledger, table: Tensor) -> tuple[np.ndarray, Any]:
    """A tied table's gradient as the ledger recorded it: (the classifier's dense (V, d) float64
    array, the lookup's coalesced RowSparse). Works for any model whose ledger names one
    `classifier ...` and one `lookup ...` path into `table` (TinyLM and TinyGPT alike)."""
    by_path = led.path_grads(table)
    classifier = [g for name, g in by_path.items() if name.startswith("classifier")]
    lookup = [g for name, g in by_path.items() if name.startswith("lookup")]
    if len(by_path) != 2 or len(classifier) != 1 or len(lookup) != 1:  # nothing else may reach it
        raise ValueError(f"split_paths: expected exactly one classifier and one lookup path into the "
                         f"table, the ledger has {sorted(by_path)}")
    return np.asarray(classifier[0], dtype=np.float64), lookup[0].coalesce()


def classifier_share(sent: dict[str, np.ndarray], rows: np.ndarray) -> float:
    """classifier / (classifier + lookup) of the gradient traffic (summed row norms) to `rows`;
    sent: {"classifier": (V,), "lookup": (V,)} norms summed over steps."""
    c, k = sent["classifier"][rows].sum(), sent["lookup"][rows].sum()
    return float(c / (c + k))
