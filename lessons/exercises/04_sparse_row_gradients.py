"""Lesson 4 exercise: the embedding lookup and its backward, as a minigrad Function.

Fill in forward and backward below, then run `minigrad check 4`. Once your copy passes, lesson 4
runs its measurements on your Embedding: every lookup in the lesson goes through it.
"""

import numpy as np

import minigrad as mg


class Embedding(mg.Function):
    """out[...] = weight[ids[...]], and the table's gradient.

    The signature is the one of minigrad's own op (minigrad.engine.ops.Embedding), so that
    `minigrad.use(Embedding=Embedding)` can run yours wherever minigrad would run its own.
    """

    @staticmethod
    def forward(ctx, weight: np.ndarray, ids: np.ndarray, sparse: bool = True,
                padding_idx: int | None = None) -> np.ndarray:
        """weight: (V, d) float; ids: int array of shape S = () (one id), (T,) or (B, T), each id
        in [0, V), or empty -> (*S, d).

        sparse:      how backward returns the table's gradient (see backward).
        padding_idx: None, or a row id whose row never receives a gradient (as in PyTorch).
        Keep on ctx what backward will need (ctx.anything = value); the arrays you are given
        belong to the caller.
        """
        raise NotImplementedError("lesson 4: write Embedding.forward")

    @staticmethod
    def backward(ctx, grad: np.ndarray):
        """grad: (*S, d), dL/d(out): one vector per position of ids.

        Returns (dL/dweight, None): ids are integers and get no gradient.
        dL/dweight, with sparse=True: mg.RowSparse(indices, values, shape), where indices lists
        each row the batch read exactly once, values[k] is the gradient of row indices[k]
        (in grad's dtype), and shape is the table's (V, d). With sparse=False: the same
        numbers as a dense (V, d) array.

        Work out the rows with numpy yourself: RowSparse.coalesce() (and to_dense(), which
        calls it) does the very thing this exercise is about, so the check does not accept it.
        """
        raise NotImplementedError("lesson 4: write Embedding.backward")
