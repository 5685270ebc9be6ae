"""Lesson 6 exercise: wire the tie in a language model.

Fill in the function below, then run `minigrad check 6`. Once your copy passes, lesson 6 ties its
models with your function, and its ledger and its drawing are made on the model you tied.
"""

import minigrad as mg


def tie_weights(model: mg.nn.Module) -> mg.nn.Module:
    """Tie `model`'s output map to its token table, so that one table is both read and said.

    model: an untied language model, for example
           minigrad.models.TinyLM(V, d, hidden, tied=False): the table is model.emb (an
           nn.Embedding, weight (V, d)), the output map model.head (an nn.Linear(d, V), whose
           weight is (V, d) too, as in PyTorch);
           minigrad.models.TinyGPT(V, context, d, heads, layers, tied=False): the table is
           model.transformer.wte, the output map model.lm_head.
           The check ties both kinds.
    returns: the model, tied.

    A tie is more than equal numbers: training must keep the two roles equal forever, every
    gradient from either role must reach the same table, and an optimizer must step it once
    per step. Think about what, in the model, has to be the same object.
    """
    raise NotImplementedError("lesson 6: write tie_weights(model)")
