"""Lesson 11's byte-pair ladder: vocabularies of several sizes learned from one text.

Byte-pair training is greedy (each merge is the most frequent pair of the text as the merges
before it left it), so a vocabulary of k merges is the first k merges of a longer run: one run
of the trainer gives every rung. `byte_pair_ladder` takes them from minigrad's trainer
(`BytePairs.train`, minigrad/learn/bpe.py, which recounts only the pre-tokens a merge changed)
and, when the learner's `merge_step` is given, learns the rungs it can afford with that step,
one full pass over the pre-tokens per merge, after checking that it agrees with minigrad's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from minigrad.learn.bpe import SPACE, BytePairs

MergeStep = Callable[[dict[tuple, int]], tuple[Any, dict[tuple, int]]]


def merges_with(merge_step: MergeStep, words: Sequence[str], merges: int) -> list[tuple[str, str]]:
    """The first `merges` merges learned from `words` by `merge_step` (the learner's): each word a
    pre-token with its leading space, as BytePairs.train writes them, one call per merge."""
    pieces: dict[tuple, int] = {tuple(SPACE + word): n for word, n in Counter(words).items()}
    learned: list[tuple[str, str]] = []
    while len(learned) < merges:
        pair, pieces = merge_step(pieces)
        if pair is None:
            break
        learned.append(tuple(pair))
    return learned


def byte_pair_ladder(words: Sequence[str], rungs: Sequence[int], merge_step: MergeStep | None = None,
                     yours_up_to: int = 0) -> tuple[dict[int, BytePairs], str]:
    """({merges: the BytePairs vocabulary of that many merges} for each rung, a line that says
    whose merges each rung has).

    merge_step: the learner's one merge (lesson 11), used for the rungs of at most `yours_up_to`
    merges, provided its merges equal minigrad's; when they do not, minigrad's are used and the
    line says where the two first part."""
    minigrads: list[tuple[str, str]] = [(a, b) for a, b in BytePairs.train(list(words), max(rungs)).merges]
    merges = {rung: minigrads[:rung] for rung in rungs}
    small = [rung for rung in rungs if rung <= yours_up_to]
    whose = "every rung learned by minigrad's trainer"
    if merge_step is not None and small:
        yours = merges_with(merge_step, words, max(small))
        parted = _first_difference(yours, minigrads, max(small))
        if parted is None:
            merges.update({rung: yours[:rung] for rung in small})
            whose = (f"the rungs of {' and '.join(map(str, small))} merges learned with your merge_step (its "
                     "merges are minigrad's), the others by minigrad's trainer")
        else:
            mine = yours[parted] if parted < len(yours) else None
            whose = (f"using minigrad's merges: your merge_step parts from them at merge {parted + 1} on "
                     f"this text (yours {mine!r}, minigrad's {minigrads[parted]!r})")
    alphabet = set(SPACE + "".join(words))
    return {rung: BytePairs(alphabet, m) for rung, m in merges.items()}, whose


def _first_difference(yours: list, minigrads: list, count: int) -> int | None:
    """The first of the first `count` merges where the two lists differ (or yours stopped), or None."""
    return next((k for k in range(count) if k >= len(yours) or yours[k] != minigrads[k]), None)
