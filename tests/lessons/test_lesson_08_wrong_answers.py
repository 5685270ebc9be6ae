"""Lesson 8's check: the reference passes, the stub is "not attempted", and the usual slips in a
training step and in an evaluation are each named."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import course as runner
from minigrad.learn.train import next_token_loss
from minigrad.nn import functional as F

ROOT = Path(__file__).resolve().parents[2]
check = runner.load_check(runner.get_lesson(8, ROOT / "lessons"))
SOLUTION = runner.load_module(ROOT / "lessons" / "solutions" / "08_tiny_language_model.py")


def answers(train_step=SOLUTION.train_step, mean_loss=SOLUTION.mean_loss):
    return SimpleNamespace(train_step=train_step, mean_loss=mean_loss)


def test_the_reference_passes():
    check(answers())


def test_zero_grad_after_step_is_the_same_step_and_passes():
    def step(model, optimizer, ids, targets):
        loss = next_token_loss(model(ids), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()
    check(answers(train_step=step))


def test_the_stub_is_not_attempted():
    stub = runner.load_module(ROOT / "lessons" / "exercises" / "08_tiny_language_model.py")
    with pytest.raises(NotImplementedError):
        check(stub)


# ---- train_step ---------------------------------------------------------------------------------

def ordered(*actions, scale=1.0, returns="before"):
    def step(model, optimizer, ids, targets):
        loss = next_token_loss(model(ids), targets) * (len(targets.reshape(-1)) if scale == "sum" else 1.0)
        for action in actions:
            {"zero": optimizer.zero_grad, "backward": loss.backward, "step": optimizer.step}[action]()
        if returns == "after":
            with mg.no_grad():
                return next_token_loss(model(ids), targets).item()
        return loss if returns == "tensor" else loss.item()
    return step


def test_forgotten_zero_grad_is_named():
    with pytest.raises(AssertionError, match=r"as if each batch's gradient were added to the ones before it"):
        check(answers(train_step=ordered("backward", "step")))


def test_zero_grad_between_backward_and_step_moves_nothing():
    with pytest.raises(AssertionError, match=r"no parameter moved on the first step"):
        check(answers(train_step=ordered("backward", "zero", "step")))


def test_step_before_backward_is_refused_by_the_engine_and_explained():
    with pytest.raises(AssertionError, match=r"(?s)modified in place.*an optimizer step between the forward "
                                             r"pass and loss.backward\(\)"):
        check(answers(train_step=ordered("step", "backward")))


def test_two_optimizer_steps_are_named():
    with pytest.raises(AssertionError, match=r"each batch moved your parameters twice"):
        check(answers(train_step=ordered("zero", "backward", "step", "step")))


def test_a_summed_loss_is_named_by_the_step_it_takes():
    def step(model, optimizer, ids, targets):
        loss = next_token_loss(model(ids), targets, reduction="sum")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item() / targets.size  # returns the mean: only the step is wrong
    with pytest.raises(AssertionError, match=r"the first step was 5 times too long: you trained on the loss"):
        check(answers(train_step=step))


def test_a_returned_tensor_is_refused_with_the_reason():
    with pytest.raises(AssertionError, match=r"train_step returned a Tensor; return loss.item\(\)"):
        check(answers(train_step=ordered("zero", "backward", "step", returns="tensor")))


def test_the_loss_after_the_update_is_named():
    with pytest.raises(AssertionError, match=r"returned the batch's loss after the update"):
        check(answers(train_step=ordered("zero", "backward", "step", returns="after")))


def test_a_new_optimizer_each_step_is_named():
    def step(model, optimizer, ids, targets):
        own = mg.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
        loss = next_token_loss(model(ids), targets)
        own.zero_grad()
        loss.backward()
        own.step()
        return loss.item()
    with pytest.raises(AssertionError, match=r"the optimizer you were given never took a step"):
        check(answers(train_step=step))


def test_one_target_per_window_for_tinygpt_is_caught():
    def step(model, optimizer, ids, targets):  # keeps only the last position's prediction
        logits = model(ids)
        loss = F.cross_entropy(logits[:, -1] if logits.ndim == 3 else logits,
                               targets[:, -1] if targets.ndim == 2 else targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()
    with pytest.raises(AssertionError, match=r"TinyGPT under AdamW .*after step 1 your parameters differ"):
        check(answers(train_step=step))


# ---- mean_loss ----------------------------------------------------------------------------------

def chunked(average_of_means=False, first_only=False, total=False, per_window=False, grad=False,
            rows_per_chunk=None):
    def mean_loss(model, ids, targets, batch_size=1024):
        positions = 1 if targets.ndim == 1 else targets.shape[1]
        rows = rows_per_chunk or max(1, batch_size // positions)
        sums, means = 0.0, []
        with (mg.enable_grad() if grad else mg.no_grad()):
            for start in range(0, len(ids), rows):
                piece = next_token_loss(model(ids[start:start + rows]), targets[start:start + rows],
                                        reduction="sum").item()
                sums += piece
                means.append(piece / targets[start:start + rows].size)
                if first_only:
                    return means[0]
        if average_of_means:
            return float(np.mean(means))
        if total:
            return sums
        return sums / (len(ids) if per_window else targets.size)
    return mean_loss


def test_the_average_of_chunk_means_is_named():
    with pytest.raises(AssertionError, match=r"you averaged the chunks' mean losses, but the last chunk"):
        check(answers(mean_loss=chunked(average_of_means=True)))


def test_only_the_first_chunk_is_named():
    with pytest.raises(AssertionError, match=r"only the first chunk was counted"):
        check(answers(mean_loss=chunked(first_only=True)))


def test_a_sum_instead_of_a_mean_is_named():
    with pytest.raises(AssertionError, match=r"that is the sum over the targets, not their mean"):
        check(answers(mean_loss=chunked(total=True)))


def test_dividing_by_windows_instead_of_targets_is_named():
    with pytest.raises(AssertionError, match=r"you divided by the 5 windows, but each predicts 4 tokens"):
        check(answers(mean_loss=chunked(per_window=True)))


def test_recording_a_graph_is_named():
    with pytest.raises(AssertionError, match=r"the model ran while a graph was being recorded"):
        check(answers(mean_loss=chunked(grad=True)))


def test_batch_size_counted_in_windows_is_named():
    def mean_loss(model, ids, targets, batch_size=1024):
        return chunked(rows_per_chunk=batch_size)(model, ids, targets, batch_size)
    with pytest.raises(AssertionError, match=r"counts predicted positions; each window here predicts 4"):
        check(answers(mean_loss=mean_loss))


def test_no_chunks_at_all_is_named():
    def mean_loss(model, ids, targets, batch_size=1024):
        with mg.no_grad():
            return next_token_loss(model(ids), targets).item()
    with pytest.raises(AssertionError, match=r"the model got 7 windows in one call, but batch_size=3"):
        check(answers(mean_loss=mean_loss))


def test_a_chunk_of_no_window_is_reported_as_the_error_it_raises():
    def mean_loss(model, ids, targets, batch_size=1024):
        rows = batch_size // (1 if targets.ndim == 1 else targets.shape[1])  # 0 when a window is larger
        with mg.no_grad():
            total = sum(next_token_loss(model(ids[i:i + rows]), targets[i:i + rows], reduction="sum").item()
                        for i in range(0, len(ids), rows))
        return total / targets.size
    with pytest.raises(AssertionError, match=r"(?s)mean_loss\(\) raised ValueError.*batch_size=3"):
        check(answers(mean_loss=mean_loss))


def test_an_evaluation_that_runs_backward_is_named():
    def mean_loss(model, ids, targets, batch_size=1024):
        loss = next_token_loss(model(ids[:1]), targets[:1])
        loss.backward()  # "to check the gradients"
        return SOLUTION.mean_loss(model, ids, targets, batch_size)
    with pytest.raises(AssertionError, match=r"the model ran while a graph was being recorded"):
        check(answers(mean_loss=mean_loss))


def test_an_evaluation_that_clears_the_gradients_is_named():
    def mean_loss(model, ids, targets, batch_size=1024):
        model.zero_grad()
        return SOLUTION.mean_loss(model, ids, targets, batch_size)
    with pytest.raises(AssertionError, match=r"mean_loss changed the parameters' .grad"):
        check(answers(mean_loss=mean_loss))


def test_a_lost_default_batch_size_is_named():
    def mean_loss(model, ids, targets, batch_size):  # train() calls mean_loss(model, ids, targets)
        return SOLUTION.mean_loss(model, ids, targets, batch_size)
    with pytest.raises(AssertionError, match=r"(?s)mean_loss\(\) raised TypeError.*batch_size"):
        check(answers(mean_loss=mean_loss))


def test_tinygpts_logits_passed_whole_are_explained():
    def step(model, optimizer, ids, targets):  # (B, C, V) logits read as classes on C
        loss = F.cross_entropy(model(ids), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()
    with pytest.raises(AssertionError, match=r"(?s)step\(\) raised .*\(B, C, V\) logits are B \* C rows"):
        check(answers(train_step=step))
