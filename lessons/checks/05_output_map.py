"""Check for lesson 5: dL/dW = (P - Y)^T H / N and dL/dH = (P - Y) W / N for logits H W^T."""

from types import ModuleType

import numpy as np

from minigrad.nn import functional as F

from . import _common as common

# (targets, V, d): one position first, so sign and target mistakes are named in the simplest
# setting; then a batch, where a missing 1/N shows (and a repeated target).
CASES = [
    (np.array([2]), 5, 3),
    (np.array([1, 4, 1, 0]), 6, 3),
]


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _mean_cross_entropy(targets: np.ndarray):
    return lambda h, w: F.cross_entropy(F.linear(h, w), targets)


def check(answers: ModuleType) -> None:
    output_map_grads = common.answer_function(answers, "output_map_grads")
    rng = np.random.default_rng(55)
    for targets, vocab_size, width in CASES:
        n = targets.size
        H = rng.standard_normal((n, width))
        W = rng.standard_normal((vocab_size, width))
        loss = _mean_cross_entropy(targets)
        expected_dW = common.reference_gradient(loss, [H, W], wrt=1)
        expected_dH = common.reference_gradient(loss, [H, W], wrt=0)

        hint = (f"Shapes here: H is (N, d) = {H.shape}, W is (V, d) = {W.shape}, targets is (N,) = "
                f"{targets.shape}; logits H W^T are (N, V); return (dL/dW {W.shape}, dL/dH {H.shape})")
        answer = common.call_answer(output_map_grads, H, W, targets, hint=hint)
        if not isinstance(answer, (tuple, list)) or len(answer) != 2:
            raise AssertionError(
                f"output_map_grads should return a pair (dL/dW, dL/dH), got {type(answer).__name__}"
            )
        dW = common.as_array(answer[0], "dL/dW")
        dH = common.as_array(answer[1], "dL/dH")

        # the typical wrong answers, written with P (probabilities) and Y (one-hot targets)
        P = _softmax(H @ W.T)
        Y = np.eye(vocab_size)[targets]
        common.expect_shape(dW, W.shape, "dL/dW", known={
            (width, vocab_size): "it is transposed (H^T (P - Y)); W is (V, d) as in nn.Linear(d, V), so "
                                 "dL/dW has a row for each vocabulary entry: (P - Y)^T H / N",
        })
        common.expect_shape(dH, H.shape, "dL/dH", known={
            (n, vocab_size): "that is the logits' gradient dL/dz = (P - Y) / N; carry it one step further "
                             "down, through z = h W^T, to h",
        })
        common.assert_matches(dW, expected_dW, "dL/dW", _mistakes_dW(P, Y, H, expected_dW),
                              parts=_per_position(P - Y, H, n), kind="path")
        common.assert_matches(dH, expected_dH, "dL/dH", _mistakes_dH(P, Y, W, expected_dH))


def _per_position(dz: np.ndarray, H: np.ndarray, n: int) -> dict:
    """Row i of dL/dW is a sum over positions; name each position's share, to spot a dropped one."""
    return {i: [(f"position {k}", dz[k, i] * H[k] / n) for k in range(n)] for i in range(dz.shape[1])}


def _mistakes_dW(P, Y, H, expected) -> list:
    n = len(H)
    mistakes = [
        (-expected, "the sign is flipped: you used (y - p) h, but the gradient is (p - y) h (the target's "
                    "row gets (p_c - 1) h, so a step against the gradient moves it toward h)"),
        (P.T @ H / n, "every row is p_i h, but the target's row needs (p_c - 1) h: you forgot the target's "
                      "-1 (the y in p - y)"),
        ((Y * (P - 1)).T @ H / n,
         "only the target rows have a gradient, but every row gets (p_i - y_i) h: the softmax makes each "
         "logit matter to the loss, so a wrong row is pushed by its probability p_i"),
    ]
    if n > 1:
        mistakes.append(((P - Y).T @ H, f"it is {n} times too large: the loss is the mean over N = {n} "
                                        "positions, so each position's gradient carries a factor 1/N"))
    return mistakes


def _mistakes_dH(P, Y, W, expected) -> list:
    n = len(P)
    mistakes = [
        (-expected, "the sign is flipped: you used sum_i (y_i - p_i) w_i, but dL/dh = sum_i (p_i - y_i) w_i"),
        (P @ W / n, "you have sum_i p_i w_i, forgetting the target's -1: dL/dh also has -w_c, the "
                    "pull toward the target's row"),
        ((Y * (P - 1)) @ W / n, "you kept only the target's term (p_c - 1) w_c, but every row contributes: "
                                "dL/dh = sum_i (p_i - y_i) w_i"),
    ]
    if n > 1:
        mistakes.append(((P - Y) @ W, f"it is {n} times too large: the loss is the mean over N = {n} "
                                      "positions, so each position's gradient carries a factor 1/N"))
    return mistakes
