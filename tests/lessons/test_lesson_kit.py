"""minigrad.learn.kit: the setup every lesson shares, the one Spearman, the one unit_rows,
and the table geometry and gradient split that lessons 6, 11 and 12 share."""

from __future__ import annotations

import itertools
import os
import sys
import types
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad.learn import kit


def brute_force_average_ranks(x: np.ndarray) -> np.ndarray:
    """The definition: 1 + the number of smaller values + half the number of other equal ones."""
    return np.array([1 + np.sum(x < v) + (np.sum(x == v) - 1) / 2 for v in x])


@pytest.mark.parametrize("values", [[10.0, 20, 20, 5], [3, 3, 3], [1, 2, 3, 4], [2, 1, 2, 1, 2, 0]])
def test_average_ranks_share_the_mean_rank_among_ties(values):
    x = np.array(values, dtype=float)
    assert np.array_equal(kit.average_ranks(x), brute_force_average_ranks(x))


def test_spearman_does_not_depend_on_the_order_of_tied_values():
    # Ties broken by position (argsort of argsort) would give different answers for these two
    # listings of the same pairs; average ranks give one.
    counts = np.array([1, 1, 1, 2, 2, 5, 9, 9])
    norms = np.array([0.3, 0.1, 0.2, 0.4, 0.5, 0.6, 0.8, 0.7])
    values = set()
    for order in itertools.islice(itertools.permutations(range(8)), 0, 5000, 97):
        order = np.array(order)
        values.add(round(kit.spearman(counts[order], norms[order]), 12))
    assert len(values) == 1
    expected = np.corrcoef(brute_force_average_ranks(counts), brute_force_average_ranks(norms))[0, 1]
    assert values == {round(float(expected), 12)}


def test_unit_rows_keeps_each_direction_and_makes_every_length_one():
    table = np.random.default_rng(3).standard_normal((7, 5)) * np.arange(1, 8)[:, None]
    unit = kit.unit_rows(table)
    assert unit.shape == table.shape
    assert np.allclose(np.linalg.norm(unit, axis=1), 1.0)
    # each row is a positive multiple of its own row: same direction, not another row's
    assert np.allclose(unit * np.linalg.norm(table, axis=1, keepdims=True), table)


def test_spearman_is_one_for_any_increasing_relation_and_minus_one_for_decreasing():
    x = np.linspace(-2, 3, 17)
    assert np.isclose(kit.spearman(x, np.exp(x)), 1.0)
    assert np.isclose(kit.spearman(x, -x**3), -1.0)


def test_spearman_matches_scipy_where_installed():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, 40), rng.integers(0, 7, 40)  # many ties
    assert np.isclose(kit.spearman(x, y), stats.spearmanr(x, y).statistic)


def test_statistics_name_bad_shapes():
    with pytest.raises(ValueError, match=r"spearman: x has shape \(3,\) but y has shape \(4,\)"):
        kit.spearman(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match=r"average_ranks: expected a 1-d array, got shape \(2, 2\)"):
        kit.average_ranks(np.zeros((2, 2)))


@pytest.mark.parametrize(("raw", "cap"), [(None, 1), ("2", 2), ("0", None)])
def test_blas_thread_cap_defaults_to_one(monkeypatch, raw, cap):
    if raw is None:
        monkeypatch.delenv("MINIGRAD_BLAS_THREADS", raising=False)
    else:
        monkeypatch.setenv("MINIGRAD_BLAS_THREADS", raw)
    assert kit.blas_thread_cap() == cap


@pytest.mark.parametrize("raw", ["two", "-1"])
def test_blas_thread_cap_names_a_bad_value(monkeypatch, raw):
    monkeypatch.setenv("MINIGRAD_BLAS_THREADS", raw)
    with pytest.raises(ValueError, match=f"MINIGRAD_BLAS_THREADS='{raw}': expected"):
        kit.blas_thread_cap()


def test_cap_blas_threads_limits_and_restores():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    if not blas:
        pytest.skip("no BLAS library that threadpoolctl can see")
    before = [p["num_threads"] for p in blas]
    row_block_threads = mg.kernels.get_threads()
    with kit.cap_blas_threads(1):
        assert {p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"} == {1}
        assert mg.kernels.get_threads() == 1  # the fast kernels' row blocks too
    assert [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"] == before
    assert mg.kernels.get_threads() == row_block_threads
    cap = kit.cap_blas_threads(1)
    cap.restore_original_limits()  # the lab's way of ending it
    assert mg.kernels.get_threads() == row_block_threads


def test_setup_makes_the_figure_folder_and_reads_small(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIGRAD_OUT", str(tmp_path))
    monkeypatch.setenv("MINIGRAD_SMALL", "1")
    monkeypatch.delenv("MINIGRAD_FAST", raising=False)
    monkeypatch.setenv("MINIGRAD_BLAS_THREADS", "0")
    lesson = kit.setup(7)
    assert (lesson.number, lesson.out, lesson.small) == (7, tmp_path / "lesson-07", True)
    assert lesson.out.is_dir() and capsys.readouterr() == ("", "")  # a short lesson says nothing
    monkeypatch.delenv("MINIGRAD_SMALL")
    assert not kit.setup(7).small


def test_minigrad_fast_still_means_small_for_one_release_and_says_it_is_deprecated(tmp_path, monkeypatch,
                                                                                    capsys):
    monkeypatch.setenv("MINIGRAD_OUT", str(tmp_path))
    monkeypatch.delenv("MINIGRAD_SMALL", raising=False)
    monkeypatch.setenv("MINIGRAD_FAST", "1")
    monkeypatch.setenv("MINIGRAD_BLAS_THREADS", "0")
    assert kit.setup(7).small
    assert "MINIGRAD_FAST=1 is deprecated and will be removed in the next release; use MINIGRAD_SMALL=1" in (
        capsys.readouterr().err)
    assert kit.small_mode(announce=False) and capsys.readouterr().err == ""


def test_the_old_fast_spellings_of_the_kit_still_work_and_warn(tmp_path):
    with pytest.warns(DeprecationWarning, match=r"LessonSetup\(fast=\.\.\.\) is deprecated.*small"):
        lesson = kit.LessonSetup(8, tmp_path, fast=True)
    assert lesson.small
    with pytest.warns(DeprecationWarning, match=r"lesson\.fast is deprecated.*lesson\.small"):
        assert lesson.fast is True
    with pytest.warns(DeprecationWarning, match=r"lesson\.sizes\(fast=\.\.\.\) is deprecated"):
        assert lesson.sizes(full=dict(steps=4000), fast=dict(steps=300)).steps == 300
    with pytest.warns(DeprecationWarning, match=r"expected_duration\(fast=\.\.\.\) is deprecated"):
        assert "at the small size" in kit.expected_duration((1.5, 0.2), fast=True)
    with pytest.raises(TypeError, match="give the small sizes once"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        lesson.sizes(full=dict(steps=1), small=dict(steps=1), fast=dict(steps=1))
    with pytest.raises(TypeError, match=r"missing the small sizes, small=dict"):
        lesson.sizes(full=dict(steps=1))


def test_long_lessons_say_how_long_they_take(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert kit.expected_duration((1.5, 0.2), small=False) == (
        "This lesson takes about 1.5 minutes at full size (12 s with `--small` or MINIGRAD_SMALL=1) "
        "on a quiet 2-core machine.")
    assert kit.expected_duration((1.5, 0.2), small=True) == (
        "This lesson takes about 12 s at the small size on a quiet 2-core machine.")
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 6.0, 3.0))
    assert kit.expected_duration((1.5, 0.2), small=False).endswith(
        "The machine is busy now (load average 8.0 on 2 cores), so expect up to 4.0 times longer.")


def test_save_writes_closes_and_captions_a_figure(tmp_path, capsys):
    plt = pytest.importorskip("matplotlib.pyplot")
    lesson = kit.LessonSetup(3, tmp_path, small=True)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = lesson.save(fig, "line.png", "a line going down")
    assert path == tmp_path / "line.png" and path.stat().st_size > 0
    assert not plt.fignum_exists(fig.number)
    assert capsys.readouterr().out == f"figure: {path}\n  shows: a line going down\n"


def test_setup_leaves_a_notebooks_inline_backend_alone(tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    monkeypatch.setenv("MINIGRAD_OUT", str(tmp_path))
    monkeypatch.setenv("MINIGRAD_BLAS_THREADS", "0")
    chosen = []
    monkeypatch.setattr(matplotlib, "use", lambda backend: chosen.append(backend))
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    kit.setup(2)
    assert chosen == ["Agg"]  # a script or the runner: headless
    kernel_shell = types.SimpleNamespace(kernel=object())  # what ipykernel's shell has, Colab's too
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: kernel_shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert kit.in_notebook()
    kit.setup(2)
    assert chosen == ["Agg"]  # a Jupyter kernel: not switched


# ---- the geometry of a table, and a tied table's gradient by path --------------------------------

def test_mean_cosine_matches_the_pairwise_matrix_and_cone_centres_on_the_mean_row():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((7, 3)) + np.array([3.0, 0.0, 1.0])  # an offset: a cone
    rows = kit.unit_rows(table)
    pairs = (rows @ rows.T)[~np.eye(7, dtype=bool)]
    assert np.isclose(kit.mean_cosine(kit.tensor(table)).item(), pairs.mean())
    assert np.isclose(kit.pair_cosines(table).mean(), pairs.mean())
    raw, centred = kit.cone(table)
    assert np.isclose(raw, pairs.mean()) and raw > 0.5
    assert np.isclose(centred, kit.pair_cosines(table - table.mean(axis=0)).mean())
    assert kit.cone(table, np.array([0, 2, 5]))[0] == pytest.approx(kit.pair_cosines(table[[0, 2, 5]]).mean())


def test_principal_axes_finds_a_planted_frequency_axis_and_signs_it_upwards():
    rng = np.random.default_rng(1)
    log_count = rng.uniform(0, 8, 200)
    direction = np.array([0.6, -0.8, 0.0, 0.0])
    table = rng.standard_normal((200, 4)) * 0.1 - 3.0 * np.outer(log_count, direction)  # falls with frequency
    pc1, rho, share = kit.principal_axes(table, log_count)
    assert rho[0] > 0.99 and rho[1:].max() < 0.3 and share > 0.9
    assert kit.spearman(pc1, log_count) > 0.99, "the scores are signed to rise with frequency"
    with pytest.raises(ValueError, match=r"principal_axes: 200 rows but log_count has shape \(3,\)"):
        kit.principal_axes(table, log_count[:3])


def test_warmup_cosine_rises_for_five_percent_then_decays_to_a_tenth():
    lrs = [kit.warmup_cosine(step, 100, peak=2.0) for step in range(100)]
    assert lrs[0] == pytest.approx(0.4) and lrs[4] == pytest.approx(2.0)  # 5 warm-up steps
    assert all(a >= b for a, b in zip(lrs[4:], lrs[5:])), "decreasing after the warm-up"
    assert lrs[-1] == pytest.approx(0.2, abs=0.01) and kit.warmup_cosine(100, 100, 2.0) == pytest.approx(0.2)


def test_split_paths_on_tied_tinygpt_and_tinylm_add_up_to_the_gradient():
    from minigrad.engine import to_dense
    from minigrad.models import TinyGPT, TinyLM
    from minigrad.tools.ledger import ledger

    rng = np.random.default_rng(2)
    for model, table in ((m := TinyGPT(30, 6, 8, 2, 1, tied=True, rng=0), m.transformer.wte.weight),
                         (n := TinyLM(30, 4, 5, context=2, tied=True, rng=0), n.emb.weight)):
        ids = rng.integers(0, 30, (3, 6 if model is m else 2))
        targets = rng.integers(0, 30, (3, 6) if model is m else 3)
        loss = model.loss(ids, targets)
        with ledger(names=model) as led:
            loss.backward()
        classifier, lookup = kit.split_paths(led, table)
        assert np.allclose(classifier + to_dense(lookup), table.grad, atol=1e-6)
        assert set(lookup.indices.tolist()) == set(ids.ravel().tolist())
        sent = {"classifier": np.linalg.norm(classifier, axis=1), "lookup": np.zeros(30)}
        sent["lookup"][lookup.indices] = np.linalg.norm(lookup.values, axis=1)
        unread = np.setdiff1d(np.arange(30), ids)
        assert kit.classifier_share(sent, unread) == 1.0, "a row nobody read gets only the classifier's"
        assert 0 < kit.classifier_share(sent, np.unique(ids)) < 1


def test_split_paths_names_what_it_found_when_a_path_is_missing():
    from minigrad.models import TinyLM
    from minigrad.tools.ledger import ledger

    model = TinyLM(10, 4, 5, context=1, tied=False, rng=0)
    loss = model.loss(np.array([[1], [2]]), np.array([3, 4]))
    with ledger(names=model) as led:
        loss.backward()
    with pytest.raises(ValueError, match=r"split_paths: expected exactly one classifier and one lookup "
                                         r"path into the table, the ledger has "
                                         r"\['lookup emb \(EmbeddingBackward\)'\]"):
        kit.split_paths(led, model.emb.weight)


# ---- sizes chosen in one place, and verdicts the small mode does not test ----------------------

def test_sizes_pick_the_mode(tmp_path):
    full, small = dict(steps=4000, vocab=2000), dict(steps=300, vocab=500)
    assert kit.LessonSetup(8, tmp_path, small=False).sizes(full=full, small=small).steps == 4000
    picked = kit.LessonSetup(8, tmp_path, small=True).sizes(full=full, small=small)
    assert (picked.steps, picked.vocab) == (300, 500)


def test_sizes_name_a_setting_only_one_mode_has(tmp_path):
    lesson = kit.LessonSetup(8, tmp_path, small=True)
    with pytest.raises(ValueError, match=r"only in full: \['vocab'\], only in small: \[\]"):
        lesson.sizes(full=dict(steps=1, vocab=2), small=dict(steps=1))


def test_verdict_tested_says_what_the_small_mode_skips(tmp_path, capsys):
    assert kit.LessonSetup(6, tmp_path, small=False).verdict_tested("the bands separate")
    assert capsys.readouterr().out == ""
    assert not kit.LessonSetup(6, tmp_path, small=True).verdict_tested("the bands separate")
    assert "small mode: not testing that the bands separate" in capsys.readouterr().out


def test_the_front_door_re_exports_every_module_of_the_kit():
    from minigrad.learn.kit import figures, geometry, lesson, plots, rare_rows, training, verdicts
    for module in (figures, geometry, lesson, plots, rare_rows, training, verdicts):
        public = [name for name in vars(module) if not name.startswith("_") and callable(vars(module)[name])
                  and getattr(vars(module)[name], "__module__", "") == module.__name__]
        assert public and all(getattr(kit, name) is getattr(module, name) for name in public), module.__name__


# ---- training pieces shared by lessons 9 to 13 --------------------------------------------------

def _tiny_models(tied: bool):
    from minigrad.models import TinyGPT, TinyLM
    return TinyLM(9, 4, 6, context=3, tied=tied, rng=0), TinyGPT(9, 5, 8, 2, 1, tied=tied, rng=0)


def test_predicts_every_position_tells_the_two_models_apart():
    lm, gpt = _tiny_models(tied=True)
    assert not kit.predicts_every_position(lm, 3) and kit.predicts_every_position(gpt, 5)


def test_tables_of_copies_both_maps_in_float64():
    lm, _ = _tiny_models(tied=False)
    tables = kit.tables_of(lm)
    assert tables["E"].dtype == tables["W"].dtype == np.float64
    assert np.array_equal(tables["E"], lm.emb.weight.data)
    assert np.array_equal(tables["W"], lm.head.weight.data)
    tables["E"][0, 0] += 1.0
    assert not np.array_equal(tables["E"], lm.emb.weight.data), "a copy, not a view of the weights"


def test_train_on_text_trains_either_model_and_gives_targets_to_every_position():
    ids = np.random.default_rng(0).integers(0, 9, 2000)
    for model, context in zip(_tiny_models(tied=True), (3, 5)):
        before = model.input_table.data.copy()
        history = kit.train_on_text(model, ids, context=context, steps=4, batch_size=8, seed=0,
                                    evaluations=2, held_out_stride=2)
        assert history.eval_steps == [0, 2, 4] and history.positions == (1 if context == 3 else 5)
        assert not np.array_equal(before, model.input_table.data), "the table trained"


def test_tied_share_curve_records_windows_and_refuses_an_untied_model():
    from minigrad.learn.train import split_windows
    ids = np.random.default_rng(1).integers(0, 9, 300)
    windows, _ = split_windows(ids, 3, valid_fraction=0.1, pieces=2)
    lm, _ = _tiny_models(tied=True)
    bands = {"low ids": np.arange(1, 4), "high ids": np.arange(4, 9)}
    starts, shares, moved = kit.tied_share_curve(lm, windows, batch_size=8, steps=10, every=5, window=2,
                                                 bands=bands, seed=0)
    assert starts == [0, 5] and all(len(s) == 2 and all(0 < x <= 1 for x in s) for s in shares.values())
    assert all(m.shape == (2, 2) and np.all(m >= 0) and np.all(m.sum(axis=1) > 0) for m in moved.values())
    untied, _ = _tiny_models(tied=False)
    with pytest.raises(ValueError, match="tied_share_curve: the model is untied"):
        kit.tied_share_curve(untied, windows, batch_size=8, steps=2, every=1, window=1, bands=bands, seed=0)


def test_tied_share_curve_displacement_is_the_gradient_over_adams_divisor():
    """Row 8 never occurs in the text: only the classifier moves it. At Adam's first step
    v_hat = g^2, so each of its d numbers moves by g / (|g| + eps), about 1: the row's
    displacement is sqrt(d), all of it the classifier's; the traffic is |g|, not sqrt(d)."""
    from minigrad.learn.train import split_windows
    ids = np.random.default_rng(1).integers(0, 8, 300)
    windows, _ = split_windows(ids, 3, valid_fraction=0.1, pieces=2)
    lm, _ = _tiny_models(tied=True)
    _, shares, moved = kit.tied_share_curve(lm, windows, batch_size=8, steps=1, every=1, window=1,
                                            bands={"absent": np.array([8])}, seed=0)
    assert shares["absent"] == [1.0] and moved["absent"][0, 1] == 0
    assert moved["absent"][0, 0] == pytest.approx(np.sqrt(4), rel=1e-4)
