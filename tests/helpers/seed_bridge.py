"""The vocabulary bridge audit in plain numpy, written independently of minigrad.

The reference for the ledger, drawing and tour tests: the same seed, shapes and context vector
as the numpy demo of the seed page (shared/seeds/000_474bf48ad71508a8.txt), derived here from
the cross-entropy gradient dL/dz = p - onehot(target), without any minigrad code.

Running the seed page's own demo prints these three norms (rounded to 4 places); the tests
assert our numbers round to the same values, and match this module to ~1e-12.
"""

import numpy as np

V, D = 6, 4
CAT = 1
CONTEXT = np.array([0.05, -0.03, 0.02, 0.04])
SEED_PRINTED = {"untied lookup": 0.185, "untied classifier": 0.3222, "tied shared row": 0.5799}


def starting_weights(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """The table E (V, D) and the untied classifier W_U (D, V), drawn in that order."""
    gen = np.random.default_rng(seed)
    table = 0.2 * gen.normal(size=(V, D))
    unembed = 0.2 * gen.normal(size=(D, V))
    return table, unembed


def _dlogits(logits: np.ndarray, target: int) -> np.ndarray:
    """d cross_entropy / d logits = softmax(logits) - onehot(target)."""
    e = np.exp(logits - logits.max())
    g = e / e.sum()
    g[target] -= 1.0
    return g


def untied_paths(table: np.ndarray, unembed: np.ndarray, read: int = CAT, target: int = CAT):
    """(lookup gradient on E, classifier gradient on Linear's weight W_U^T), both (V, D)."""
    hidden = table[read] + CONTEXT
    g = _dlogits(hidden @ unembed, target)
    lookup = np.zeros_like(table)
    lookup[read] = unembed @ g  # dL/dh = W_U g lands on the row that was read
    return lookup, np.outer(g, hidden)  # dL/dW_U^T[v] = g_v h


def tied_paths(table: np.ndarray, read: int = CAT, target: int = CAT):
    """(lookup gradient, classifier gradient), both on the one table E, (V, D)."""
    hidden = table[read] + CONTEXT
    g = _dlogits(table @ hidden, target)  # logit_v = <E[v], h>
    lookup = np.zeros_like(table)
    lookup[read] = table.T @ g
    return lookup, np.outer(g, hidden)


# ---- the same bridge as minigrad modules, for the ledger and drawing tests ---------------------

def bridge(tied: bool):
    """emb reads a row, head scores the vocabulary; tied by plain assignment."""
    from minigrad import nn

    table, unembed = starting_weights()
    model = nn.Module()
    model.emb = nn.Embedding(V, D, dtype=np.float64)
    model.emb.weight = nn.Parameter(table)
    model.head = nn.Linear(D, V, bias=False, dtype=np.float64)
    model.head.weight = model.emb.weight if tied else nn.Parameter(unembed.T.copy())
    return model
