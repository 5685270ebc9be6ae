"""Lesson 5 exercise: cross-entropy and its backward, as a minigrad Function.

Fill in forward and backward below, then run `minigrad check 5`. Once your copy passes, lesson 5
runs its measurements on your CrossEntropy: every loss in the lesson goes through it.
"""

import numpy as np

import minigrad as mg


class CrossEntropy(mg.Function):
    """The mean (or sum) over positions of -log softmax(logits)[target].

    The signature is the one of minigrad's own op (minigrad.engine.ops.CrossEntropy), so that
    `minigrad.use(CrossEntropy=CrossEntropy)` can run yours wherever minigrad would run its own.
    """

    @staticmethod
    def forward(ctx, logits: np.ndarray, targets: np.ndarray, reduction: str = "mean") -> np.ndarray:
        """logits: (..., C) float, one score per class at each position; targets: (...) int, the
        correct class at each position. softmax(z)_i = exp(z_i) / sum_j exp(z_j) over the last axis.

        reduction: "mean" (divide the sum by the number of positions) or "sum".
        returns: the loss as a 0-d array in the logits' dtype (np.asarray(value, dtype=logits.dtype)).
        Logits can be large (hundreds): exp must not overflow.
        Keep on ctx what backward will need.
        """
        raise NotImplementedError("lesson 5: write CrossEntropy.forward")

    @staticmethod
    def backward(ctx, grad: np.ndarray):
        """grad: a 0-d array, dL/d(loss) from whatever used the loss (1 when the loss is the end).

        Returns (dL/dlogits, None): an array shaped like the logits, and None for the targets
        (integers get no gradient).

        Derive it yourself: write the loss of one position as a function of its logits z, then
        differentiate with respect to one z_i, taking i = target and i != target in turn.
        """
        raise NotImplementedError("lesson 5: write CrossEntropy.backward")
