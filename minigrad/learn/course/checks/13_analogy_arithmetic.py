"""Check for lesson 13: solve_analogy(table, a, b, c), the 3CosAdd answer to a : b :: c : ?.

The reference takes another route than the usual sum of unit vectors: for each candidate x it
adds the three cosines cos(x, b) - cos(x, a) + cos(x, c), each from a dot product and two
norms, which ranks the candidates exactly as cos(x, unit(b) - unit(a) + unit(c)) does.
"""

from types import ModuleType

import numpy as np

from . import _common as common


def _cases() -> list[tuple[np.ndarray, int, int, int]]:
    """Rows of very unequal lengths (so scaling matters), each table asked several questions."""
    cases = []
    for seed in (11, 12):
        rng = np.random.default_rng(seed)
        table = rng.standard_normal((9, 3)) * rng.uniform(0.2, 4.0, (9, 1))
        cases += [(table, a, b, c) for a, b, c in ((0, 1, 2), (3, 4, 5), (6, 7, 8), (2, 5, 8), (1, 0, 4))]
    return cases


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def _best(scores: list[float], exclude: tuple[int, ...]) -> int:
    return max((x for x in range(len(scores)) if x not in exclude), key=lambda x: scores[x])


def _answer(table: np.ndarray, a: int, b: int, c: int) -> int:
    scores = [_cos(x, table[b]) - _cos(x, table[a]) + _cos(x, table[c]) for x in table]
    return _best(scores, (a, b, c))


def _mistakes(table: np.ndarray, a: int, b: int, c: int) -> list[tuple[int, str]]:
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    cosines = list(unit @ (unit[b] - unit[a] + unit[c]))
    raw = list(table @ (table[b] - table[a] + table[c]))
    return [
        (_best(cosines, ()), "the query words a, b and c are not allowed as answers: leave them out "
                             "(one of them usually scores highest)"),
        (_best(raw, (a, b, c)), "that is the largest dot product with b - a + c of the raw rows: scale "
                                "every row to length 1 first (a long row would win on its length)"),
        (_best(list(table @ (unit[b] - unit[a] + unit[c])), (a, b, c)),
         "the candidate rows were not scaled to length 1 (only the query rows were): a long row wins "
         "on its length"),
        (_best(list(unit @ (unit[a] - unit[b] + unit[c])), (a, b, c)),
         "the arrow points the wrong way: a : b :: c : ? adds b - a to c, not a - b"),
        (min((x for x in range(len(table)) if x not in (a, b, c)), key=lambda x: cosines[x]),
         "that is the worst candidate, not the best: take the largest cosine"),
        (_answer(table, a, b, c) + 1, "off by one: row ids start at 0"),
    ]


def check(answers: ModuleType) -> None:
    """Ask every question first, then name the one slip that explains all the answers."""
    solve_analogy = common.answer_function(answers, "solve_analogy")
    cases = _cases()
    asked = [f"solve_analogy(table of shape {t.shape}, a={a}, b={b}, c={c})" for t, a, b, c in cases]
    got = [common.as_number(common.call_answer(solve_analogy, *case), what, integer=True)
           for case, what in zip(cases, asked)]
    expected = [_answer(*case) for case in cases]
    wrong = [k for k in range(len(cases)) if got[k] != expected[k]]
    if not wrong:
        return
    first = wrong[0]
    found = f"{asked[first]} returned {got[first]:.0f}, expected {expected[first]}"
    mistakes = [_mistakes(*case) for case in cases]
    for m, (_, diagnosis) in enumerate(mistakes[0]):
        if all(got[k] == mistakes[k][m][0] for k in range(len(cases))):  # this slip explains every answer
            raise AssertionError(f"{found}: {diagnosis}")
    raise AssertionError(f"{found}, the row with the largest cos(x, b) - cos(x, a) + cos(x, c) among "
                         f"the rows other than a, b and c ({len(wrong)} of {len(cases)} questions wrong)")
