"""The learner's copies of exercises, for the lab's tests: a folder set as MINIGRAD_EXERCISES and
copies written into it (the reference answers, or a text of the test's)."""

from __future__ import annotations

import shutil
from pathlib import Path

from minigrad.learn.course import catalog

REPO = Path(__file__).resolve().parents[2]
WRONG_EMBEDDING = '''
import numpy as np
import minigrad as mg


class Embedding(mg.Function):
    """A backward twice too large: the check names the factor."""

    @staticmethod
    def forward(ctx, weight, ids, sparse=True, padding_idx=None):
        ctx.ids, ctx.shape = ids.copy(), weight.shape
        return weight[ids]

    @staticmethod
    def backward(ctx, grad):
        dense = np.zeros(ctx.shape, dtype=grad.dtype)
        np.add.at(dense, ctx.ids.reshape(-1), grad.reshape(ctx.ids.size, -1))
        return 2 * dense, None
'''
TIE_FOR_LANGUAGE_MODELS_ONLY = '''
def tie_weights(model):
    """Passes its check (TinyLM and TinyGPT) but refuses any other model."""
    name = type(model).__name__
    if name == "TinyGPT":
        model.lm_head.weight = model.transformer.wte.weight
    elif name == "TinyLM":
        model.head.weight = model.emb.weight
    else:
        raise TypeError(f"tie_weights: a {name} is not a language model I know")
    return model
'''




def learners_folder(folder: Path, monkeypatch):
    """Make `folder` the learner's working folder; returns put(N, text=None), which writes their
    copy of lesson N's exercise there (the reference answer when no text is given)."""
    monkeypatch.setenv("MINIGRAD_EXERCISES", str(folder))
    folder.mkdir(exist_ok=True)

    def put(number: int, text: str | None = None) -> Path:
        lesson = catalog.get_lesson(number)
        target = folder / lesson.path.name
        if text is None:
            shutil.copy(REPO / "lessons" / "solutions" / lesson.path.name, target)
        else:
            target.write_text(text)
        return target

    return put
