"""Lesson 7 exercise: what weight decay does to a row that receives no gradient.

Fill in the function below, then run `minigrad check 7`.
"""

import numpy as np


def norm_after_silence(row: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, step: int, k: int,
                       lr: float, weight_decay: float, betas: tuple[float, float] = (0.9, 0.999),
                       eps: float = 1e-8) -> float:
    """The norm of one table row after k silent steps of AdamW(lazy=True, decay="dense").

    The table is trained with minigrad.optim.AdamW(params, lr, betas, eps, weight_decay,
    lazy=True, decay="dense") (PyTorch's AdamW formulas). On each of the next k steps the table
    receives a RowSparse gradient that names other rows but never this one.

    row:        (d,) float, the row's values now, before the k steps.
    exp_avg:    (d,) float, Adam's first moment m of this row now (not zero: the row had
                gradients before).
    exp_avg_sq: (d,) float, Adam's second moment v of this row now.
    step:       int, how many steps the optimizer has taken on this table so far.
    k:          int >= 1, the number of steps on which the row is absent.
    lr, weight_decay, betas, eps: the optimizer's settings.
    returns:    float, the Euclidean norm of the row after the k steps.

    Hints: which of the two things AdamW does on a step (the decoupled decay, and the Adam
    update) reaches a row that is absent, when lazy=True and decay="dense"? Not every argument
    is needed; deciding which is part of the exercise. Count the factors carefully.
    """
    raise NotImplementedError("lesson 7: write norm_after_silence(row, exp_avg, exp_avg_sq, step, k, ...)")
