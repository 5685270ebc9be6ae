"""Lesson 7 reference answer."""

import numpy as np


def norm_after_silence(row: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, step: int, k: int,
                       lr: float, weight_decay: float, betas: tuple[float, float] = (0.9, 0.999),
                       eps: float = 1e-8) -> float:
    """|row| (1 - lr * weight_decay)^k: lazy steps leave an absent row's moments and values alone,
    and decay="dense" multiplies every row, present or not, once per step."""
    return float(np.linalg.norm(row) * (1 - lr * weight_decay) ** k)
