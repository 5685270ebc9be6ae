"""Lessons run their measurements on the learner's own pieces: with the reference solution
copied in as the learner's copy a lesson says `using your ...` and finishes; with a wrong copy it
says `using minigrad's ...` and why, and still finishes (on minigrad's pieces)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minigrad.learn import course as runner
from minigrad.learn.course.pieces import PIECES, names

REPO = Path(__file__).resolve().parents[2]

# A wrong copy per lesson, and the start of the diagnosis the lesson must print as its reason.
WRONG = {
    1: ('''
        def backward_walk(root, grad):
            arrived, ready, seen = {root: grad}, [root], {root}
            while ready:
                node = ready.pop()
                for child, g in zip(node.next_nodes, node.apply(arrived.pop(node))):
                    if child is not None and g is not None:
                        arrived[child] = g  # keeps the last arrival only
                        if child not in seen:
                            seen.add(child)
                            ready.append(child)
        ''', "on b = a + a; c = b + b, AddBackward #2 ran on one of the 2 gradients sent to it"),
    2: ('''
        import numpy as np

        def central_difference(f, x, eps):
            grad = np.zeros(x.shape)
            for i in np.ndindex(x.shape):
                x[i] += eps
                above = f(x)
                x[i] -= eps
                grad[i] = (above - f(x)) / eps  # a forward difference
            return grad
        ''', "this is the forward difference (f(x + eps) - f(x)) / eps"),
    3: ('''
        def table_grad_from_one_hot(one_hot, upstream):
            return upstream.T @ one_hot
        ''', "dL/dE has shape (4, 6), expected (6, 4): it is transposed"),
    4: ('''
        import numpy as np
        import minigrad as mg

        class Embedding(mg.Function):
            @staticmethod
            def forward(ctx, weight, ids, sparse=True, padding_idx=None):
                ctx.ids, ctx.shape = ids.copy(), weight.shape
                return weight[ids]

            @staticmethod
            def backward(ctx, grad):
                dense = np.zeros(ctx.shape, dtype=grad.dtype)
                dense[ctx.ids.reshape(-1)] += grad.reshape(-1, ctx.shape[1])  # drops repeats
                return dense, None
        ''', "with sparse=True (the default) return a RowSparse"),
    5: ('''
        import numpy as np
        import minigrad as mg

        class CrossEntropy(mg.Function):
            @staticmethod
            def forward(ctx, logits, targets, reduction="mean"):
                z = logits - logits.max(axis=-1, keepdims=True)
                log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
                ctx.p, ctx.targets, ctx.n = np.exp(log_p), targets, targets.size
                picked = np.take_along_axis(log_p, targets[..., None], axis=-1)
                return np.asarray(-picked.sum() / ctx.n, dtype=logits.dtype)

            @staticmethod
            def backward(ctx, grad):
                return ctx.p * grad / ctx.n, None  # the target's -1 forgotten
        ''', "dL/dlogits (reduction='mean', grad=1): every logit gets its probability p_i"),
    6: ('''
        import minigrad as mg

        def tie_weights(model):
            with mg.no_grad():
                model.head.weight.data[...] = model.emb.weight.data  # a copy, not a tie
            return model
        ''', "TinyLM: you copied the table's numbers into the output map"),
    7: ('''
        import numpy as np

        def adam_step_after_silence(m, v, t, k, g, lr, betas=(0.9, 0.999), eps=1e-8, lazy=False):
            beta1, beta2 = betas
            m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g  # the silence forgotten
            return -lr * (m / (1 - beta1 ** (t + k + 1))) / (np.sqrt(v / (1 - beta2 ** (t + k + 1))) + eps)

        def lazy_adamw_rows(rows, m, v, g, t, last_present, lr, weight_decay, betas=(0.9, 0.999),
                            eps=1e-8, decay="touched"):
            raise NotImplementedError
        ''', "adam_step_after_silence(t = 6, k = 4, lr = 0.01, eps = 1e-08, lazy = False): you left m and v"),
    8: ('''
        import minigrad as mg
        from minigrad.nn import functional as F

        def train_step(model, optimizer, ids, targets):
            loss = F.cross_entropy(model(ids), targets)
            loss.backward()  # .grad never reset
            optimizer.step()
            return loss.item()

        def mean_loss(model, ids, targets, batch_size=1024):
            with mg.no_grad():
                return F.cross_entropy(model(ids), targets).item()
        ''', "TinyLM under SGD: from the second step on, your parameters moved as if each batch's gradient"),
    9: ('''
        import numpy as np

        def rank_of_self(read, score):
            scores = read @ score.T
            return (scores >= np.diag(scores)[:, None]).sum(axis=1)  # t counted against itself
        ''', "rank_of_self(read of shape (7, 3), ...): expected"),
    10: ('''
        import numpy as np

        def classifier_and_lookup(led, table):
            sides = {"classifier": np.zeros(table.shape), "lookup": np.zeros(table.shape)}
            for c in led.contributions(table):
                sides[c.path.split(" ")[0]] += c.grad.to_dense() if hasattr(c.grad, "to_dense") else c.grad
            return sides["lookup"], sides["classifier"]  # swapped
        ''', "a tied TinyLM, one backward: the two are swapped"),
    11: ('''
        import numpy as np

        def mean_pairwise_cosine(table, centre):
            rows = table - table.mean(axis=0) if centre else table
            rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
            return float((rows @ rows.T).mean())  # the diagonal included
        ''', "mean_pairwise_cosine(table of shape (3, 2) and dtype float64, centre=False): the diagonal is "
             "included"),
    12: ('''
        import numpy as np

        def first_component_scores(table):
            _, _, vt = np.linalg.svd(table, full_matrices=False)  # not centred
            return table @ vt[0]
        ''', "first_component_scores(table of shape (4, 2) and dtype float64)"),
    13: ('''
        import numpy as np
        import minigrad as mg

        def three_cos_add(table, questions):
            unit = table / np.linalg.norm(table, axis=1, keepdims=True)
            a, b, c, d = questions.T
            scores = (unit[b] - unit[a] + unit[c]) @ unit.T  # the query words not left out
            return scores.argmax(axis=1), 1 + (scores > scores[np.arange(len(d)), d][:, None]).sum(axis=1)

        class NegativeSamplingLoss(mg.Function):
            pass
        ''', "three_cos_add(a table of shape (9, 3), 5 questions): the query words a, b and c are not"),
    14: ('''
        from collections import Counter

        def best_pair(split_counts):
            counts = Counter()
            for pieces, n in split_counts.items():
                for pair in zip(pieces, pieces[1:]):
                    counts[pair] += 1  # the word's count forgotten
            return max(counts, key=lambda pair: (counts[pair], pair))
        ''', "best_pair on one frequent word against many that begin alike"),
    15: ('''
        import numpy as np

        def longest_silences(steps, vocab_size):
            longest, last = np.zeros(vocab_size, int), np.full(vocab_size, -1)
            for t, ids in enumerate(steps):
                for i in set(np.asarray(ids).ravel().tolist()):
                    if last[i] >= 0:  # only the silences between two reads
                        longest[i] = max(longest[i], t - last[i] - 1)
                    last[i] = t
            return longest
        ''', "longest_silences(5 steps, vocab_size=4) gave [0.0, 3.0, 0.0, 0.0], expected [1, 3, 2, 5]: "
             "only the silences between two reads"),
}


def _run_lesson(number: int, tmp_path: Path, copy: str | None) -> subprocess.CompletedProcess:
    lesson = runner.get_lesson(number, REPO / "lessons")
    mine = tmp_path / "mine"
    mine.mkdir()
    if copy is not None:
        (mine / lesson.path.name).write_text(copy)
    environment = {k: v for k, v in os.environ.items() if k not in ("MINIGRAD_OUT", "MPLBACKEND")}
    environment.update(MINIGRAD_SMALL="1", PYTHONPATH=str(REPO), MINIGRAD_EXERCISES=str(mine),
                       OPENBLAS_NUM_THREADS="1")
    command = [sys.executable, "-m", "minigrad.cli", "lesson", str(number), "--no-pause", "--out",
               str(tmp_path / "out")]
    done = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"lesson {number} finished in" in done.stdout
    return done


@pytest.mark.parametrize("number", sorted(PIECES))
def test_the_lesson_runs_on_the_learners_copy_when_it_passes(number, tmp_path):
    lesson = runner.get_lesson(number, REPO / "lessons")
    done = _run_lesson(number, tmp_path, lesson.solution_path.read_text())
    assert f"  > using your {names(PIECES[number])} (mine/{lesson.path.name})\n" in done.stdout


@pytest.mark.parametrize("number", sorted(PIECES))
def test_a_wrong_copy_never_feeds_the_lesson_and_the_reason_is_printed(number, tmp_path):
    copy, reason = WRONG[number]
    done = _run_lesson(number, tmp_path, textwrap.dedent(copy))
    expected = f"  > using minigrad's {names(PIECES[number])}: your copy does not pass yet ({reason}"
    assert expected in done.stdout, done.stdout[:4000]
    assert "using your" not in done.stdout


def test_without_a_copy_the_lesson_says_how_to_make_one(tmp_path):
    done = _run_lesson(7, tmp_path, None)
    assert ("  > using minigrad's adam_step_after_silence and lazy_adamw_rows: you have not built yours yet "
            "(`minigrad exercise 7` copies the stub to mine/07_rare_rows_and_the_optimizer.py") in done.stdout
