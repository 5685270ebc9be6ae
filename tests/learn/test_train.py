"""The training helper: leak-free splits, shuffled batches, exact evaluation, a loop that learns,
reports tokens per second and draws a plain-text progress bar."""

import io

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn.train import (
    History,
    ProgressBar,
    Windows,
    batches,
    evaluate,
    format_rate,
    next_token_loss,
    split_windows,
    train,
    windows,
)
from minigrad.models import TinyLM
from minigrad.nn import functional as F

V = 8


def cyclic_tokens(n: int = 600, period: int = 5) -> np.ndarray:
    """0 1 2 3 4 0 1 2 ...: each token decides the next, so a model can learn it exactly."""
    return np.arange(n) % period


def small_model(context: int = 1, tied: bool = True, seed: int = 0) -> TinyLM:
    return TinyLM(V, embedding_dim=8, hidden=16, context=context, tied=tied, dtype=np.float64, rng=seed)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# ---- windows and splits ---------------------------------------------------------------------

def test_windows_pair_each_context_with_the_next_token():
    data = windows(np.array([5, 6, 7, 8, 9]), context=2)
    assert data.ids.tolist() == [[5, 6], [6, 7], [7, 8]]
    assert data.targets.tolist() == [7, 8, 9]
    assert len(data) == 3 and data.context == 2


def test_windows_refuses_a_nonpositive_context():
    with pytest.raises(ValueError, match=r"windows: context must be a positive int, got 0"):
        windows(np.arange(5), 0)


def test_windows_checks_shapes():
    with pytest.raises(ValueError, match=r"Windows: ids has shape \(3,\) and targets \(3,\); expected"):
        Windows(np.arange(3), np.arange(3))


def test_split_holds_out_the_end_of_the_text_and_no_window_crosses_the_cut():
    tokens = np.arange(100)  # every token distinct, so a crossing window would be visible
    train_part, valid_part = split_windows(tokens, context=3, valid_fraction=0.2)
    assert train_part.targets.tolist() == list(range(3, 80))
    assert valid_part.targets.tolist() == list(range(83, 100))
    assert train_part.ids.max() < 80 <= valid_part.ids.min()


def test_split_in_pieces_holds_out_the_end_of_every_piece():
    tokens = np.arange(200)
    train_part, valid_part = split_windows(tokens, context=2, valid_fraction=0.25, pieces=4)
    held_out = set(valid_part.targets.tolist()) | {i for row in valid_part.ids for i in row}
    trained = set(train_part.targets.tolist()) | {i for row in train_part.ids for i in row}
    assert held_out.isdisjoint(trained)
    assert sorted(held_out) == [i for p in range(4) for i in range(50 * p + 38, 50 * p + 50)]
    # each piece loses `context` windows at its start, in both parts
    assert len(train_part) == 4 * (38 - 2) and len(valid_part) == 4 * (12 - 2)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_split_refuses_a_fraction_outside_zero_one(fraction):
    with pytest.raises(ValueError, match=r"valid_fraction must be in \(0, 1\), got"):
        split_windows(np.arange(50), 2, fraction)


def test_split_names_the_part_too_short_for_a_window():
    with pytest.raises(ValueError, match=r"a part of 2 tokens makes no window of context=3 .*pieces=5"):
        split_windows(np.arange(50), 3, valid_fraction=0.2, pieces=5)


def test_split_refuses_a_bad_piece_count():
    with pytest.raises(ValueError, match=r"split_windows: pieces must be a positive int, got 0"):
        split_windows(np.arange(50), 2, pieces=0)


# ---- batches -------------------------------------------------------------------------------

def test_each_pass_visits_every_window_once():
    data = windows(np.arange(41), context=1)  # 40 windows, targets 1..40
    stream = batches(data, batch_size=8, rng=0)
    first_pass = np.concatenate([next(stream)[1] for _ in range(5)])
    assert sorted(first_pass.tolist()) == list(range(1, 41))
    second_pass = np.concatenate([next(stream)[1] for _ in range(5)])
    assert sorted(second_pass.tolist()) == list(range(1, 41))
    assert first_pass.tolist() != second_pass.tolist()  # reshuffled


def test_batches_keep_ids_and_targets_together_and_have_the_full_size():
    data = windows(np.arange(23), context=2)  # 21 windows: 2 batches of 8 per pass, 5 left over
    stream = batches(data, 8, rng=1)
    for _ in range(6):
        ids, targets = next(stream)
        assert ids.shape == (8, 2) and targets.shape == (8,)
        assert np.array_equal(ids[:, 1] + 1, targets)


def test_batches_are_reproducible_from_the_seed():
    data = windows(cyclic_tokens(100), 2)
    a, b = batches(data, 16, rng=7), batches(data, 16, rng=7)
    for _ in range(10):
        assert np.array_equal(next(a)[0], next(b)[0])


def test_batches_refuse_a_batch_larger_than_the_data():
    with pytest.raises(ValueError, match=r"batches: batch_size=50 is larger than the data \(9 windows\)"):
        next(batches(windows(np.arange(10), 1), 50))


# ---- evaluation ----------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_evaluate_is_the_mean_loss_over_every_window_whatever_the_chunk(chunk):
    model = small_model(context=2)
    data = windows(np.random.default_rng(0).integers(0, V, 60), 2)
    expected = F.cross_entropy(model(data.ids), data.targets).item()
    assert evaluate(model, data, batch_size=chunk) == pytest.approx(expected, rel=1e-12)


def test_evaluate_records_nothing():
    model = small_model()
    evaluate(model, windows(cyclic_tokens(30), 1))
    assert all(p.grad is None for p in model.parameters())


def test_evaluate_refuses_empty_data():
    empty = Windows(np.zeros((0, 1), dtype=np.int64), np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match=r"evaluate: data has no windows"):
        evaluate(small_model(), empty)


# ---- the loop ------------------------------------------------------------------------------

def run(steps=60, seed=0, tied=True, **kwargs) -> tuple[TinyLM, History]:
    train_part, valid_part = split_windows(cyclic_tokens(), context=1, valid_fraction=0.2)
    model = small_model(tied=tied, seed=seed)
    optimizer = mg.optim.AdamW(model.parameters(), lr=0.05)
    kwargs.setdefault("progress", False)
    return model, train(model, optimizer, train_part, valid_part, steps=steps, batch_size=16,
                        eval_every=20, rng=seed, **kwargs)


def test_training_lowers_both_losses_on_a_learnable_sequence():
    _, history = run()
    assert history.eval_steps == [0, 20, 40, 60]
    assert history.valid_loss[-1] < 0.2 * history.valid_loss[0]
    assert history.train_loss[-1] < 0.2 * history.train_loss[0]
    assert history.batch_loss[-10:].mean() < history.batch_loss[:10].mean()


def test_the_first_evaluation_is_before_any_step():
    model, history = run(steps=1)
    untrained = small_model()
    _, valid_part = split_windows(cyclic_tokens(), context=1, valid_fraction=0.2)
    assert history.valid_loss[0] == pytest.approx(evaluate(untrained, valid_part))
    assert history.valid_loss[1] != history.valid_loss[0]


def test_the_last_step_is_always_evaluated():
    _, history = run(steps=50)
    assert history.eval_steps == [0, 20, 40, 50]


def test_eval_from_skips_the_early_evaluations_and_keeps_the_late_ones_identical():
    _, every = run(steps=100)
    _, late = run(steps=100, eval_from=60)
    assert every.eval_steps == [0, 20, 40, 60, 80, 100]
    assert late.eval_steps == [0, 60, 80, 100]  # step 0 and the last step always
    assert late.valid_loss == [every.valid_loss[i] for i in (0, 3, 4, 5)]  # evaluation does not train
    assert late.train_loss == [every.train_loss[i] for i in (0, 3, 4, 5)]
    assert np.array_equal(late.batch_loss, every.batch_loss)


def test_tokens_per_second_counts_predicted_positions_over_training_time():
    _, history = run(steps=30)
    assert history.steps == 30 and history.tokens == 30 * 16
    assert history.train_seconds > 0
    assert history.tokens_per_second == pytest.approx(history.tokens / history.train_seconds)


def test_the_same_seed_gives_the_same_run():
    _, a = run(seed=3)
    _, b = run(seed=3)
    _, c = run(seed=4)
    assert np.array_equal(a.batch_loss, b.batch_loss) and a.valid_loss == b.valid_loss
    assert not np.array_equal(a.batch_loss, c.batch_loss)


def test_on_eval_sees_the_model_at_each_evaluation():
    seen = []
    model, history = run(on_eval=lambda step, m: seen.append((step, m.emb.weight.data.copy())))
    assert [step for step, _ in seen] == history.eval_steps
    assert np.array_equal(seen[-1][1], model.emb.weight.data)
    assert not np.array_equal(seen[0][1], seen[-1][1])


def test_a_frozen_table_stays_put():
    train_part, valid_part = split_windows(cyclic_tokens(), context=1, valid_fraction=0.2)
    model = small_model(tied=False)
    model.emb.weight.requires_grad_(False)
    before = model.emb.weight.data.copy()
    optimizer = mg.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.05)
    history = train(model, optimizer, train_part, valid_part, steps=20, batch_size=16, progress=False)
    assert np.array_equal(model.emb.weight.data, before)
    assert history.valid_loss[-1] < history.valid_loss[0]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NaN weights on purpose
def test_a_diverging_loss_names_the_step():
    train_part, valid_part = split_windows(cyclic_tokens(), context=1, valid_fraction=0.2)
    model = small_model()
    with mg.no_grad():
        model.down.weight.mul_(np.inf)
    optimizer = mg.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(FloatingPointError, match=r"train: the loss of batch 1 is nan .*lower learning rate"):
        train(model, optimizer, train_part, valid_part, steps=5, batch_size=4, progress=False)


@pytest.mark.parametrize("argument, value, message", [
    ("steps", 0, r"train: steps must be a positive int, got 0"),
    ("batch_size", 2.5, r"train: batch_size must be a positive int, got 2.5"),
    ("eval_every", -1, r"train: eval_every must be a positive int, got -1"),
    ("eval_every", 0, r"train: eval_every must be a positive int, got 0"),
    ("eval_from", -1, r"train: eval_from must be a non-negative int, got -1"),
    ("eval_from", 2.0, r"train: eval_from must be a non-negative int, got 2.0"),
    ("batch_size", 10_000, r"train: batch_size=10000 is larger than train_data \(479 windows\)"),
])
def test_train_names_a_bad_argument(argument, value, message):
    train_part, valid_part = split_windows(cyclic_tokens(), context=1, valid_fraction=0.2)
    model = small_model()
    settings = {"steps": 5, "batch_size": 4, "eval_every": 1, argument: value}
    with pytest.raises(ValueError, match=message):
        train(model, mg.optim.SGD(model.parameters()), train_part, valid_part, progress=False, **settings)


def test_train_refuses_empty_validation():
    train_part, _ = split_windows(cyclic_tokens(), context=1)
    empty = Windows(np.zeros((0, 1), dtype=np.int64), np.zeros(0, dtype=np.int64))
    model = small_model()
    with pytest.raises(ValueError, match=r"train: valid_data has no windows"):
        train(model, mg.optim.SGD(model.parameters()), train_part, empty, steps=1, batch_size=1)


# ---- the progress bar ----------------------------------------------------------------------

def test_progress_goes_to_the_given_stream_as_whole_lines_off_a_terminal():
    stream = io.StringIO()
    run(steps=40, progress=True, stream=stream, label="tiny")
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert 2 <= len(lines) <= 11  # the first step, each tenth of the way, the end
    assert lines[-1].startswith("tiny [########################] 40/40  loss ")
    assert "loss " in lines[-1] and "valid " in lines[-1] and "tok/s" in lines[-1]


def test_progress_redraws_one_line_on_a_terminal():
    terminal = FakeTerminal()
    bar = ProgressBar(10, "run", stream=terminal, interval=0.0)
    for done in range(1, 11):
        bar.update(done, "loss 1.000")
    bar.close()
    text = terminal.getvalue()
    assert text.count("\r") == 10 and text.endswith("\n") and text.count("\n") == 1
    assert "run [############------------]  5/10  loss 1.000" in text


def test_progress_on_a_terminal_skips_redraws_closer_than_the_interval_but_not_the_last():
    terminal = FakeTerminal()
    bar = ProgressBar(100, stream=terminal, interval=3600.0)
    for done in range(1, 101):
        bar.update(done)
    assert terminal.getvalue().count("\r") == 2  # the first and the last


def test_disabled_progress_writes_nothing():
    stream = io.StringIO()
    bar = ProgressBar(5, stream=stream, enabled=False)
    bar.update(3, "x")
    bar.close()
    assert stream.getvalue() == ""


def test_rates_are_short():
    assert format_rate(950.4) == "950 tok/s"
    assert format_rate(21_345.0) == "21.3k tok/s"
    assert format_rate(3_210_000.0) == "3.21M tok/s"


class FakeNotebookStream(io.StringIO):
    """Stands in for ipykernel's OutStream: not a tty, from the ipykernel package."""

    def isatty(self) -> bool:
        return False


FakeNotebookStream.__module__ = "ipykernel.iostream"


def test_progress_redraws_in_place_in_a_notebook_without_terminal_escapes():
    stream = FakeNotebookStream()
    bar = ProgressBar(10, "nb", stream=stream, interval=0.0)
    for done in range(1, 11):
        bar.update(done, "loss 1.000")
    bar.close()
    text = stream.getvalue()
    assert text.count("\r") == 10 and text.count("\n") == 1 and text.endswith("\n")
    assert "\033" not in text  # a notebook would print the escape
    last = text.rsplit("\r", 1)[1]
    assert last.startswith("nb [########################] 10/10  loss 1.000")


def test_a_real_ipykernel_stream_counts_as_a_notebook():
    iostream = pytest.importorskip("ipykernel.iostream")
    from minigrad.learn.train import _is_notebook_stream

    assert _is_notebook_stream(iostream.OutStream.__new__(iostream.OutStream))
    assert not _is_notebook_stream(io.StringIO()) and not _is_notebook_stream(FakeTerminal())


# ---- TinyGPT: a target at every position ------------------------------------------------------

def test_every_position_windows_shift_targets_by_one_and_hold_out_without_overlap():
    tokens = np.arange(40)
    w = windows(tokens, 4, every_position=True)
    np.testing.assert_array_equal(w.ids[2], [2, 3, 4, 5])
    np.testing.assert_array_equal(w.targets[2], [3, 4, 5, 6])
    assert w.positions == 4 and windows(tokens, 4).positions == 1
    train_part, valid_part = split_windows(tokens, 4, valid_fraction=0.25, every_position=True)
    assert len(train_part) == 30 - 4 and valid_part.ids[:, 0].tolist() == [30, 34]  # stride C
    assert not set(train_part.targets.ravel()) & set(valid_part.ids.ravel())


def test_train_fits_tinygpt_with_a_schedule_and_counts_every_position():
    from minigrad.models import TinyGPT
    from minigrad.optim import AdamW
    from minigrad.optim import lr_scheduler as S

    train_part, valid_part = split_windows(cyclic_tokens(), context=6, valid_fraction=0.2,
                                           every_position=True)
    model = TinyGPT(V, 6, 16, 2, 1, dtype=np.float64, rng=0)
    optimizer = AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    schedule = S.SequentialLR(optimizer, [S.LinearLR(optimizer, 0.1, total_iters=10),
                                          S.CosineAnnealingLR(optimizer, T_max=70)], milestones=[10])
    stream = io.StringIO()
    history = train(model, optimizer, train_part, valid_part, steps=80, batch_size=8, scheduler=schedule,
                    stream=stream)
    assert history.valid_loss[-1] < 0.2 * history.valid_loss[0]  # the cycle is learned
    assert history.tokens == 80 * 8 * 6
    assert optimizer.param_groups[0]["lr"] < 1e-4  # the cosine ran to its end
    assert "valid" in stream.getvalue()
    expected = float(next_token_loss(model(valid_part.ids), valid_part.targets).item())
    assert evaluate(model, valid_part, batch_size=12) == pytest.approx(expected, rel=1e-12)


def test_max_seconds_stops_training_and_evaluates_the_last_step():
    train_part, valid_part = split_windows(cyclic_tokens(), context=1, valid_fraction=0.2)
    model = small_model()
    history = train(model, mg.optim.SGD(model.parameters(), lr=0.1), train_part, valid_part, steps=10_000,
                    batch_size=4, max_seconds=0.05, progress=False)
    assert 1 <= history.steps < 10_000 and history.batch_loss.shape == (history.steps,)
    assert history.train_seconds >= 0.05 and history.eval_steps[-1] == history.steps
