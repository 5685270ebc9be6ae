"""Lesson 7 reference answers."""

import numpy as np


def adam_step_after_silence(m: np.ndarray, v: np.ndarray, t: int, k: int, g: np.ndarray, lr: float,
                            betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                            lazy: bool = False) -> np.ndarray:
    beta1, beta2 = betas
    if not lazy:  # a silent step is a zero gradient: the moments decay, nothing is added
        m, v = beta1**k * m, beta2**k * v
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    step = t + k + 1  # bias correction counts the table's steps, silent ones included
    return -lr * (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + eps)


def lazy_adamw_rows(rows: np.ndarray, m: np.ndarray, v: np.ndarray, g: np.ndarray, t: int,
                    last_present: np.ndarray, lr: float, weight_decay: float,
                    betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                    decay: str = "touched") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    beta1, beta2 = betas
    keep = 1 - lr * weight_decay
    if decay == "catch_up":  # this step's factor and one for each of the t - last - 1 steps missed
        factor = keep ** (t - np.asarray(last_present))
    else:
        factor = np.full(len(rows), keep)
    rows = rows * factor[:, None]  # decoupled: decay first, then Adam's step
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    rows = rows - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    return rows, m, v
