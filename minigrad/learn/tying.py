"""Lesson 6's piece, minigrad's side: tie a language model's output map to its token table.

`tie_weights(model)` is what lesson 6 runs until the learner's own passes `minigrad check 6`:
it finds the token table (an `nn.Embedding` of V rows) and the output map (the `nn.Linear`
with V outputs reading vectors of the table's width) and makes the Linear's weight the
Embedding's Parameter, as `TinyLM(tied=True)` and `TinyGPT(tied=True)` do when they are built.
"""

from __future__ import annotations

from minigrad.nn.layers import Embedding, Linear
from minigrad.nn.module import Module


def tie_weights(model: Module) -> Module:
    """Make the output map's weight the token embedding's Parameter (one object, two roles);
    returns the model. The token table is the Embedding with the most rows; ValueError unless
    exactly one Linear has its weight's shape."""
    tables = [m for _, m in model.named_modules() if isinstance(m, Embedding)]
    if not tables:
        raise ValueError("tie_weights: the model has no nn.Embedding to tie its output map to")
    table = max(tables, key=lambda m: m.weight.shape[0])  # the token table: positions are fewer
    heads = [m for _, m in model.named_modules()
             if isinstance(m, Linear) and m.weight.shape == table.weight.shape]
    if len(heads) != 1:
        raise ValueError(f"tie_weights: expected one nn.Linear with the token table's weight shape "
                         f"{tuple(table.weight.shape)}, found {len(heads)}")
    (head,) = heads
    head.weight = table.weight
    return model
