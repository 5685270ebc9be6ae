"""Lesson 10 reference answer."""

import numpy as np

import minigrad as mg


def classifier_and_lookup(led: mg.tools.ledger.Ledger, table: mg.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Add every contribution the ledger kept into the side its path names, densifying row-sparse ones."""
    sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
    for contribution in led.contributions(table):
        role = contribution.path.split(" ")[0]  # 'classifier head (...)' -> 'classifier'
        grad = contribution.grad
        if isinstance(grad, mg.RowSparse):
            np.add.at(sides[role], grad.indices, grad.values)  # a row named twice gets both parts
        else:
            sides[role] += grad
    return sides["classifier"], sides["lookup"]
