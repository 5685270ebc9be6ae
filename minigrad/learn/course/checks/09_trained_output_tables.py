"""Check for lesson 9: rank_of_self(read, score), where token t ranks on its own round trip.

The reference ranks each row one token at a time, with an explicit loop over candidates, so it
shares no code with the vectorised answer a learner usually writes.
"""

from types import ModuleType

import numpy as np

from . import _common as common


def _cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """Untied and tied tables, with a tie written in so that ties are tested; a tied table with
    two equal rows; and tables of the lesson's width, where a dot product summed in another order
    than the matrix product's can differ from it in the last bits."""
    rng = np.random.default_rng(9)
    read, score = rng.standard_normal((7, 3)), rng.standard_normal((7, 3))
    tied = rng.standard_normal((6, 2)) * rng.uniform(0.3, 3.0, (6, 1))
    with_tie = score.copy()
    with_tie[4] = with_tie[2]          # token 4 scores exactly as token 2 does, for every read row
    twins = tied.copy()
    twins[5] = twins[1]                # two tokens with one row: each ties the other on its own row
    wide = rng.standard_normal((60, 64)) * rng.uniform(0.5, 2.0, (60, 1))
    return [(read, score), (tied, tied), (read, with_tie), (twins, twins), (wide, wide)]


def _ranks(read: np.ndarray, score: np.ndarray) -> np.ndarray:
    """One pair at a time; t's own score is one of its row's scores, so it never outscores itself."""
    ranks = []
    for t in range(len(read)):
        row = [float(read[t] @ score[j]) for j in range(len(score))]
        ranks.append(sum(1 for j in range(len(score)) if row[j] > row[t]))
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
        ((scores > np.sum(read * score, axis=1)[:, None]).sum(axis=1),
         "t's own score is computed apart from the others (a row-wise sum of products), and in the "
         "last bits it can come out below the same number from the matrix product, so t outscores "
         "itself: take t's own score from the very product its row is compared with (its diagonal)"),
    ]


def check(answers: ModuleType) -> None:
    """Ask every case first, then name the one slip that explains all the answers."""
    rank_of_self = common.answer_function(answers, "rank_of_self")
    cases = _cases()
    got = [_asked(rank_of_self, read, score) for read, score in cases]
    expected = [_ranks(read, score) for read, score in cases]
    wrong = [k for k in range(len(cases)) if not np.array_equal(got[k], expected[k])]
    if not wrong:
        return
    k = wrong[0]
    found = (f"rank_of_self(read of shape {cases[k][0].shape}, ...): expected {expected[k].tolist()}, got "
             f"{got[k].astype(int).tolist() if np.all(got[k] == np.round(got[k])) else got[k].tolist()}")
    slip = _slip_explaining(got, expected, cases, wrong)
    if slip:
        raise AssertionError(f"{found}: {slip}")
    raise AssertionError(f"{found}; for each t count the j with read[t] . score[j] > read[t] . score[t] "
                         f"({len(wrong)} of {len(cases)} cases wrong)")


def _asked(rank_of_self, read: np.ndarray, score: np.ndarray) -> np.ndarray:
    what = f"rank_of_self(read of shape {read.shape}, score of shape {score.shape})"
    hint = "read and score are (V, d); return one whole number per token, shape (V,)"
    answer = common.as_array(common.call_keeping_inputs(rank_of_self, read, score, hint=hint), what)
    common.expect_shape(answer, (len(read),), what, known={
        (len(read), len(read)): "that is the whole (V, V) table of scores; count, for each row t, the "
                                "tokens that score higher than t",
    })
    return answer


def _slip_explaining(got: list, expected: list, cases: list, wrong: list[int]) -> str:
    """The diagnosis of the one slip that gives every answer (a case it does not change may be
    right), or ''."""
    mistakes = [_mistakes(read, score) for read, score in cases]
    for m, (_, diagnosis) in enumerate(mistakes[0]):
        explains = [np.array_equal(got[j], mistakes[j][m][0]) for j in range(len(cases))]
        unchanged = [j not in wrong and np.array_equal(mistakes[j][m][0], expected[j])
                     for j in range(len(cases))]
        if explains[wrong[0]] and all(e or u for e, u in zip(explains, unchanged)):
            return diagnosis
    return ""
