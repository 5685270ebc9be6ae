"""Check for lesson 9: rank_of_self(read, score), where token t ranks on its own round trip.

The reference ranks each row one token at a time, with an explicit loop over candidates, so it
shares no code with the vectorised answer a learner usually writes.
"""

from types import ModuleType

import numpy as np

from . import _common as common


def _cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """Untied and tied tables, with a tie written in so that ties are tested."""
    rng = np.random.default_rng(9)
    read, score = rng.standard_normal((7, 3)), rng.standard_normal((7, 3))
    tied = rng.standard_normal((6, 2)) * rng.uniform(0.3, 3.0, (6, 1))
    with_tie = score.copy()
    with_tie[4] = with_tie[2]          # token 4 scores exactly as token 2 does, for every read row
    return [(read, score), (tied, tied), (read, with_tie)]


def _ranks(read: np.ndarray, score: np.ndarray) -> np.ndarray:
    ranks = []
    for t in range(len(read)):
        own = float(read[t] @ score[t])
        ranks.append(sum(1 for j in range(len(score)) if float(read[t] @ score[j]) > own))
    return np.array(ranks)


def _mistakes(read: np.ndarray, score: np.ndarray) -> list[tuple[np.ndarray, str]]:
    scores = read @ score.T
    own = np.diag(scores)[:, None]
    return [
        ((scores >= own).sum(axis=1), "t is counted against itself (>= instead of >): a token on top "
                                      "should have rank 0, and a tie should not push t down"),
        (((scores.T > np.diag(scores)[:, None]).sum(axis=1)),
         "rows and columns are swapped: row t of read @ score.T holds read[t] . score[j] for every j, "
         "so compare along the row, not down the column"),
        ((scores < own).sum(axis=1), "that counts the tokens scoring lower than t: the rank counts those "
                                     "scoring higher"),
        ((np.argmax(scores, axis=1) != np.arange(len(read))).astype(int),
         "that only says whether t is on top (0 or 1); count how many tokens score higher"),
    ]


def check(answers: ModuleType) -> None:
    """Ask every case first, then name the one slip that explains all the answers."""
    rank_of_self = common.answer_function(answers, "rank_of_self")
    cases, got = _cases(), []
    for read, score in cases:
        what = f"rank_of_self(read of shape {read.shape}, score of shape {score.shape})"
        hint = "read and score are (V, d); return one whole number per token, shape (V,)"
        answer = common.as_array(common.call_answer(rank_of_self, read, score, hint=hint), what)
        common.expect_shape(answer, (len(read),), what, known={
            (len(read), len(read)): "that is the whole (V, V) table of scores; count, for each row t, the "
                                    "tokens that score higher than t",
        })
        got.append(answer)
    expected = [_ranks(read, score) for read, score in cases]
    wrong = [k for k in range(len(cases)) if not np.array_equal(got[k], expected[k])]
    if not wrong:
        return
    k = wrong[0]
    found = (f"rank_of_self(read of shape {cases[k][0].shape}, ...): expected {expected[k].tolist()}, got "
             f"{got[k].astype(int).tolist() if np.all(got[k] == np.round(got[k])) else got[k].tolist()}")
    mistakes = [_mistakes(read, score) for read, score in cases]
    for m, (_, diagnosis) in enumerate(mistakes[0]):
        if all(np.array_equal(got[j], mistakes[j][m][0]) for j in range(len(cases))):
            raise AssertionError(f"{found}: {diagnosis}")
    raise AssertionError(f"{found}; for each t count the j with read[t] . score[j] > read[t] . score[t] "
                         f"({len(wrong)} of {len(cases)} cases wrong)")
