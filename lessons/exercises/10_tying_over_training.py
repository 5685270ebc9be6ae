"""Lesson 10 exercise: a tied row's gradient, split into what each of its two readers sent.

Fill in the function below, then run `minigrad check 10`. Once your copy passes, lesson 10's
curves of the classifier's share over training are computed from your split.
"""

import numpy as np

import minigrad as mg


def classifier_and_lookup(led: mg.tools.ledger.Ledger, table: mg.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """A tied table's gradient from one backward, split by who sent it.

    led:   the gradient ledger of one backward (`with mg.ledger(names=model) as led:
           loss.backward()`), which kept every gradient that reached a parameter.
           led.contributions(table) lists them in the order they arrived; each has
           .path, a name such as 'classifier head (LinearBackward)' or 'lookup emb
           (EmbeddingBackward)' (a second use of the same module: 'lookup emb #2 (...)'), and
           .grad, the gradient it sent: a dense (V, d) array, or an mg.RowSparse with .indices
           (n,) and .values (n, d) (row indices[k] receives values[k]).
    table: the tied (V, d) Parameter, read by the lookup and by the classifier.
    returns: (classifier, lookup), two dense (V, d) float arrays: what every classifier path
           sent, and what every lookup path sent. Together they are the table's gradient.
    """
    raise NotImplementedError("lesson 10: write classifier_and_lookup(led, table)")
