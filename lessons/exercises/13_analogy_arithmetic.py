"""Lesson 13 exercise: the analogy test, and skip-gram's loss with its backward.

Fill in the function and the class below, then run `minigrad check 13`. Once your copy passes,
lesson 13 scores every table on the 588 questions with your `three_cos_add` and trains skip-gram
on your `NegativeSamplingLoss`.
"""

import numpy as np

import minigrad as mg


def three_cos_add(table: np.ndarray, questions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Answer analogy questions a : b :: c : ? by 3CosAdd, and rank the right answer d.

    table:     (V, d) float, one row per word. A row may be all zero (a word the table never
               learned): it has no direction, so its cosine with anything counts as 0.
    questions: (n, 4) int, each row the ids a, b, c, d ("man : woman :: king : queen").
    returns:   (answers, ranks), each (n,) int: answers[i] is the word x, other than a, b and c,
               whose row has the largest cosine with unit(b) - unit(a) + unit(c) (unit(w): w's
               row scaled to length 1); ranks[i] is 1 + the number of those candidate words that
               score strictly higher than d (1: the question was answered right).
    """
    raise NotImplementedError("lesson 13: write three_cos_add(table, questions)")


class NegativeSamplingLoss(mg.Function):
    """Skip-gram's loss on the rows one batch reads, as a minigrad Function.

    For pair i, v_i is the centre word's row of the input table and u_i0 the context word's row
    of the output table, u_i1 ... u_iK the rows of K noise words. With s the logistic sigmoid,
        loss = mean over the B pairs of  -log s(u_i0 . v_i) - sum_k log s(-u_ik . v_i).
    """

    @staticmethod
    def forward(ctx, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        """v: (B, d) float, the centres' rows; u: (B, 1 + K, d) float, each pair's context row
        first, then its K noise rows. returns: the loss, a 0-d array in v's dtype. Scores can be
        large (hundreds) either way: the loss must stay finite. Keep on ctx what backward needs;
        the arrays you are given belong to the caller."""
        raise NotImplementedError("lesson 13: write NegativeSamplingLoss.forward")

    @staticmethod
    def backward(ctx, grad: np.ndarray):
        """grad: 0-d, dL/d(loss). returns (dL/dv, dL/du), shaped like v and u, in their dtype."""
        raise NotImplementedError("lesson 13: write NegativeSamplingLoss.backward")
