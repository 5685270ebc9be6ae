"""Lesson 7 exercise: the optimizer's step for a rare row, in two pieces.

Fill in the two functions below, then run `minigrad check 7`. Once your copy passes, lesson 7
predicts Adam's step after a silence with your first function and trains its touched-only
and catch-up tables with your second.
"""

import numpy as np


def adam_step_after_silence(m: np.ndarray, v: np.ndarray, t: int, k: int, g: np.ndarray, lr: float,
                            betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                            lazy: bool = False) -> np.ndarray:
    """How Adam moves one table row on the step its gradient comes back after a silence.

    The table is trained with minigrad.optim.Adam(params, lr, betas, eps, lazy=lazy), no weight
    decay (PyTorch's Adam formulas). After step t this row's moments are m and v. On each of
    the next k steps the table gets a gradient that does not name this row. On the step after
    those the row's gradient is g.

    m, v:  (d,) float, the row's first and second moments (exp_avg, exp_avg_sq) after step t.
    t:     int >= 1, how many steps the optimizer had taken on the table by then.
    k:     int >= 0, the number of steps on which the row is absent.
    g:     (d,) float, the row's gradient on the step after those k.
    lazy:  False: an absent row counts as a zero gradient (torch.optim.Adam on a dense
           gradient). True: an absent row is not touched at all (torch.optim.SparseAdam's rule).
    returns: (d,) float, the change of the row on that step (the row after minus the row before).
    """
    raise NotImplementedError("lesson 7: write adam_step_after_silence(m, v, t, k, g, lr, ...)")


def lazy_adamw_rows(rows: np.ndarray, m: np.ndarray, v: np.ndarray, g: np.ndarray, t: int,
                    last_present: np.ndarray, lr: float, weight_decay: float,
                    betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                    decay: str = "touched") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of AdamW(lazy=True, decay=decay) on the n rows that this step's gradient names.

    Only these rows are updated (the others are not passed in). AdamW's weight decay is
    decoupled (PyTorch's AdamW): it multiplies the weights, it is not added to the gradient.

    rows:  (n, d) float, the rows' values before the step.
    m, v:  (n, d) float, their first and second moments before the step.
    g:     (n, d) float, their gradient on this step.
    t:     int >= 1, this step's number: the optimizer's step count on the table, this step included.
    last_present: (n,) int, the step on which each row was last in a gradient (0: never).
    decay: "touched": a row is decayed only on the steps it is present.
           "catch_up": like touched, and a row that was absent also gets, now, the decay of
           every step it missed, so that in the end it has been decayed once per step.
    returns: (rows, m, v) after the step, each (n, d).
    """
    raise NotImplementedError("lesson 7: write lazy_adamw_rows(rows, m, v, g, t, last_present, ...)")
