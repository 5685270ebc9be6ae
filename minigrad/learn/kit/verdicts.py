"""The verdict checks of lessons 5-13, one named function per verdict: every verdict check of the
course lives here.

Each function takes what a lesson measured and returns its conditions as `{statement: holds}`;
`hold(conditions)` raises an AssertionError naming every statement that does not hold, and
`holds(conditions)` says whether all of them do (for a lesson that asserts a claim fails in some
regime: `assert not holds(freezing_is_free(...))`). A lesson
writes `hold(decay_in_a_language_model(...))`. tests/lessons/test_lesson_NN_removals.py run the
lesson's own measuring code (small) with the effect taken out of it (decay switched off in the
optimizer, the tie broken, a table put back to its initial rows, the text shuffled, a run
stopped early) and check that the named statement then fails, and holds with the effect in;
tests/lessons/test_lesson_verdicts.py feeds the functions data built to have or lack an effect.

`full_size`: the conditions that only the full-size run can meet (the lesson passes
`lesson.verdict_tested("...")`, False in the small mode) are left out when it is False.

A condition is `bool(...)` of a comparison, so a NaN anywhere makes it False: no verdict passes
on NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

Conditions = dict[str, bool]
ByThird = dict[str, dict[tuple[str, str], np.ndarray]]  # tied_compromise's curves read by thirds

# Student's t, the 97.5% point, by degrees of freedom (a two-sided 95% interval)
T_975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
}


def hold(conditions: Conditions, where: str = "") -> None:
    """Raise an AssertionError that lists every condition that does not hold (`where`: which
    model or setting, for the message)."""
    failed = failures(conditions)
    if failed:
        raise AssertionError(
            f"the verdict does not hold{' for ' + where if where else ''}: " + "; ".join(failed)
        )


def failures(conditions: Conditions) -> list[str]:
    """The statements that do not hold (for tests and notes)."""
    return [statement for statement, holds in conditions.items() if not holds]


def holds(conditions: Conditions) -> bool:
    """Whether every statement holds (`assert holds(...)` where a lesson asserts the opposite too)."""
    if not conditions:
        raise ValueError("holds: no conditions given (an empty verdict proves nothing)")
    return not failures(conditions)


def _all(x) -> bool:
    return bool(np.all(np.asarray(x)))


def t_interval(x) -> tuple[float, float]:
    """95% t-interval of the mean of x (one value per seed; 2 to 16 values)."""
    x = np.asarray(x, dtype=np.float64)
    if not 2 <= len(x) <= 16:
        raise ValueError(f"t_interval: needs 2 to 16 values, got {len(x)}")
    half = T_975[len(x) - 1] * x.std(ddof=1) / np.sqrt(len(x))
    return float(x.mean() - half), float(x.mean() + half)


def welch_interval(a, b) -> tuple[float, float]:
    """95% interval of mean(a) - mean(b) for two independent samples (Welch's t, degrees of
    freedom rounded down, at least 1): seeds of two different models are not pairs."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2
    t = T_975[int(min(max(math.floor(dof), 1), 15))]
    diff = float(a.mean() - b.mean())
    return diff - t * se, diff + t * se


# ---- lesson 5: the output map -------------------------------------------------------------


def every_row_every_position(touched_out: np.ndarray, touched_in: np.ndarray) -> Conditions:
    """touched_out, touched_in: (positions, V) whether each row of the output map, and of a table
    read by a lookup, got a nonzero gradient from each position."""
    touched_out, touched_in = np.asarray(touched_out, bool), np.asarray(touched_in, bool)
    return {
        "every row of the output map gets a gradient from each position": _all(touched_out),
        "a lookup gives one row a gradient per position": _all(touched_in.sum(axis=1) == 1),
    }


def near_miss_pushed_hardest(p: np.ndarray, push: np.ndarray, target: int) -> Conditions:
    """One position's probabilities p (V,) and the length of each output row's gradient, push (V,),
    with the correct token `target`."""
    p, push = np.asarray(p, np.float64), np.asarray(push, np.float64)
    wrong = np.arange(len(p)) != target
    likeliest, pushed_most = np.argsort(-p[wrong])[:10], np.argsort(-push[wrong])[:10]
    return {
        "the 10 likeliest wrong tokens are the 10 pushed hardest, in that order (the near-miss first)":
            bool(np.array_equal(likeliest, pushed_most)),
        "a wrong token pushed 100 times harder is 100 times likelier (push proportional to p)": bool(
            np.ptp(np.log(push[wrong] / p[wrong])) < 1e-6),
    }


def round_trip_on_random_tables(widths, tied, uneven, untied, vocab_size: int) -> Conditions:
    """The share of tokens whose top score on the round trip read row -> scores is the token itself,
    per width (increasing): a tied random table, the same with rows of unequal length, and an
    untied output map drawn apart from the table."""
    widths = np.asarray(widths)
    tied, uneven, untied = (np.asarray(x, np.float64) for x in (tied, uneven, untied))
    wide = widths >= 16
    return {
        "in the narrowest space most tokens lose their own row to another": bool(tied[0] < 0.5),
        "in the widest space rows of equal length win their own row (over 90%)": bool(tied[-1] > 0.9),
        "rows of unequal length spoil the tied round trip, at every width from 16 on": _all(
            uneven[wide] < tied[wide]),
        "an untied output map gives the token back only by chance (under 10 / V)": bool(
            untied.max() < 10 / vocab_size),
    }


# ---- lesson 6: tying the two maps ---------------------------------------------------------


def two_paths_by_frequency(classifier_arrivals: np.ndarray, steps: int, bands: np.ndarray) -> Conditions:
    """A tied table trained on real text. classifier_arrivals: (V,) the steps on which the
    classifier sent each row a gradient; bands: (bands, 3) per frequency band, most frequent first:
    the share of steps the lookup reached its rows, the classifier's share of its traffic, and the
    classifier's share of its displacement."""
    bands = np.asarray(bands, np.float64)
    lookup, traffic, displacement = bands.T
    return {
        "the classifier sends every row a gradient on every step": _all(
            np.asarray(classifier_arrivals) == steps),
        "the lookup reaches the most frequent rows on most steps (over 90%), the rarest seldom (under 20%)":
            bool(lookup[0] > 0.9 and lookup[-1] < 0.2),
        "in every frequency band most of the traffic is the classifier's": _all(traffic > 0.5),
        "the rarest band's traffic is the classifier's by over 5 points more than the most frequent's": bool(
            traffic[-1] > traffic[0] + 0.05),
        "and so is its displacement, by over 3 points": bool(displacement[-1] > displacement[0] + 0.03),
    }


def absent_rows_move(moved: Mapping[str, np.ndarray]) -> Conditions:
    """moved[table]: (steps, rows) how far each row of a token absent from every batch moved on
    each step, for "tied table", "untied input table" and "untied output table"."""
    moved = {name: np.asarray(m, np.float64) for name, m in moved.items()}
    return {
        "every absent tied row moves on every step": _all(moved["tied table"] > 0),
        "an untied input row nobody reads does not change at all": _all(moved["untied input table"] == 0),
        "the same words' untied output rows move on every step": _all(moved["untied output table"] > 0),
    }


# ---- lesson 7: rare rows and the optimizer ------------------------------------------------


def adam_after_a_silence(
    pauses: np.ndarray, step_back: np.ndarray, crossing: tuple[int, int], longest_ratio: float,
    ceiling: float, periods: np.ndarray, on_arrival: np.ndarray,
) -> Conditions:
    """Adam with a constant gradient. step_back: (pauses,) the step a row takes when it comes back
    after each pause, over a frequent row's; crossing: the shortest pause after which the step
    back is longer (after the lesson's warm-up, and after a very long one); longest_ratio: the
    largest step back predicted out to 30,000 silent steps; on_arrival: (periods,) the step of a
    row with one gradient every P steps, over a frequent row's."""
    pauses, step_back, periods, on_arrival = (np.asarray(x) for x in (pauses, step_back, periods, on_arrival))
    return {
        "after pauses up to 1,000 steps the step back is shorter than a frequent row's": _all(
            step_back[pauses <= 1000] < 1),
        "it is longer only after a pause of thousands of steps (3,000 to 6,000)": bool(
            3000 < crossing[0] <= crossing[1] < 6000),
        "and never more than (1 - beta1) / sqrt(1 - beta2)": bool(longest_ratio < ceiling),
        "a rare row's step on arrival: shorter for one gradient in 10 steps, longer for one in 500": bool(
            on_arrival[periods == 10][0] < 1 < on_arrival[periods == 500][0]),
    }


def noise_and_the_ceiling(
    longest: np.ndarray, noise_levels: np.ndarray, ceiling: float, full_size: bool
) -> Conditions:
    """Adam after a long silence with noisy gradients. longest: (seeds, noise levels) the rare
    row's step on arrival over the frequent row's, at the longest period; noise_levels starts
    with 0 (a constant gradient) and includes 2 and 3."""
    levels = list(np.asarray(noise_levels, dtype=float))
    own_ceiling = ceiling * np.sqrt(1 + np.asarray(levels) ** 2)
    conditions = {
        "a constant gradient never passes 3.2": _all(longest[:, 0] < ceiling),
        "in every seed more noise means a larger ratio": _all(np.diff(longest, axis=1) > 0),
        "no noisy row passes its own ceiling 3.2 sqrt(1 + noise^2)": _all(longest < own_ceiling),
    }
    if full_size:
        conditions["noise 2: over 5 times as far, every seed"] = _all(longest[:, levels.index(2.0)] > 5)
        conditions["noise 3: over 7 times as far, every seed"] = _all(longest[:, levels.index(3.0)] > 7)
        conditions["within 30% of the ceiling at every noisy level"] = _all(
            longest[:, 1:] > 0.7 * own_ceiling[1:]
        )
    return conditions


def real_noise_sets_the_ceiling(frequent_noise: np.ndarray, ceiling: float) -> Conditions:
    """The noise-to-signal of the 10 most frequent rows' gradients (one median per seed) and the
    ceiling it sets, 3.2 sqrt(1 + noise^2)."""
    noise = np.asarray(frequent_noise, dtype=float)
    real_ceiling = ceiling * np.sqrt(1 + noise**2)
    return {
        "real gradients are noisy (noise over 2 in every seed): the ceiling is several times 3.2": _all(
            np.isfinite(noise)
        )
        and _all(noise > 2),
        "and still a bounded factor (under 50)": _all(real_ceiling < 50),
    }


def decay_on_a_zipf_stream(no_decay, dense, touched, full_size: bool) -> Conditions:
    """Spearman(count, norm) per token stream for Adam without decay, dense AdamW and
    touched-only AdamW, on the pulling objective."""
    no_decay, dense, touched = (np.asarray(x, dtype=float) for x in (no_decay, dense, touched))
    added = dense - no_decay
    conditions = {
        "in every stream dense decay adds over 0.1 to the link": _all(added > 0.1),
        "touched-only decay gives less than no decay, every stream": bool(touched.max() < no_decay.min()),
    }
    if full_size:
        conditions["decay adds the lesser part (less than the link without it), every stream"] = _all(
            added < no_decay
        )
    return conditions


def silences_in_a_language_model(rarest: np.ndarray, busiest: np.ndarray) -> Conditions:
    """(seeds, rows) each row's longest run of training steps without a read, for the rarest
    tenth of the vocabulary and for the 10 most read rows."""
    rarest, busiest = np.asarray(rarest), np.asarray(busiest)
    return {
        "the rarest tenth go silent for over a hundred steps at a time (the median of their longest "
        "silences), every seed": _all(np.median(rarest, axis=1) > 100),
        "the 10 most read rows are never silent for more than 5 steps": _all(busiest <= 5),
        "no row is silent for the 3,800 steps after which Adam's step back is longer": _all(rarest < 3800),
    }


def decay_in_a_language_model(effect: Mapping[str, np.ndarray], full_size: bool) -> Conditions:
    """Paired differences of Spearman(times read, input-row norm) over seeds, in a trained
    TinyLM: "dense decay - no decay", "touched only - lazy, no decay", "lazy Adam - Adam (no decay)"."""
    decay_adds = np.asarray(effect["dense decay - no decay"], dtype=float)
    conditions = {"every seed: dense decay adds to the link": _all(decay_adds > 0)}
    if full_size:
        conditions["a small part: under 0.2 of rank correlation in every seed"] = bool(decay_adds.max() < 0.2)
        conditions["touched-only decay works against the link, every seed"] = _all(
            np.asarray(effect["touched only - lazy, no decay"]) < 0
        )
        conditions["how Adam treats silent rows moves the link more than decay does, every seed"] = _all(
            np.asarray(effect["lazy Adam - Adam (no decay)"]) > decay_adds
        )
    return conditions


# ---- lesson 8: tying in a tiny language model ----------------------------------------------


def tying_in_tinylm(
    ends: Mapping[str, np.ndarray],
    best: Mapping[str, np.ndarray],
    gaps: Mapping[str, np.ndarray],
    full_size: bool,
) -> Conditions:
    """Held-out loss at the end and at its best, and the train/held-out gap, per seed, of the
    tied TinyLM, the untied one of the same width and the untied one of about the tied one's
    parameter count ("tied", "untied", "matched")."""
    end = {k: np.asarray(v, dtype=float) for k, v in ends.items()}
    gap = {k: np.asarray(v, dtype=float) for k, v in gaps.items()}
    same_width, same_count = end["tied"] - end["untied"], end["tied"] - end["matched"]
    best_ahead = np.asarray(best["tied"], dtype=float) - np.asarray(best["untied"], dtype=float)
    conditions = {
        "in every seed the tied and untied held-out losses are within 0.15": _all(np.abs(same_width) < 0.15)
    }
    if full_size:
        width_interval, count_interval = t_interval(same_width), t_interval(same_count)
        conditions.update(
            {
                "every seed: the tied model overfits less than the untied one of its width": _all(
                    gap["tied"] < gap["untied"]
                ),
                "every seed: untied (same width) is ahead, at the end and at its best": _all(same_width > 0)
                and _all(best_ahead > 0),
                "untied's edge at the end is under 2% of the loss": bool(
                    same_width.max() < 0.02 * end["tied"].min()
                ),
                "every seed: at equal parameters the sign flips, the tied model is ahead": _all(
                    same_count < 0
                ),
                "the narrow control overfits least, every seed": _all(gap["matched"] < gap["tied"]),
                "both differences within 0.15 nats either way (95% interval of the mean)": -0.15
                < width_interval[0]
                and width_interval[1] < 0.15
                and -0.15 < count_interval[0]
                and count_interval[1] < 0.15,
                # three seeds cannot fix the sign at the same width (the interval contains zero);
                # what they can exclude is a gain from tying there of more than 0.01 nats
                "tying gains at most 0.01 nats at the same width (95% interval's lower end)": (
                    width_interval[0] > -0.01
                ),
            }
        )
    return conditions


def near_misses_take_the_push(near: np.ndarray, full_size: bool) -> Conditions:
    """near: (..., 3) the share of the output map's push on wrong rows that goes to the 1, 10 and
    100 likeliest wrong words (any leading axes: seeds, models)."""
    near = np.asarray(near, dtype=float)
    conditions = {
        "the shares grow with k and stay at most 1": _all(np.diff(near, axis=-1) > 0)
        and _all(near[..., -1] <= 1),
        "a few near-misses take a large share (top 10 over 40%, top 100 over 75%)": _all(near[..., 1] > 0.4)
        and _all(near[..., 2] > 0.75),
    }
    if full_size:
        conditions["the 10 likeliest wrong words take most of the push (over 60%)"] = _all(near[..., 1] > 0.6)
    return conditions


def tying_in_tinygpt(
    ends: Mapping[str, np.ndarray], counts: Mapping[str, int], full_size: bool
) -> Conditions:
    """TinyGPT's held-out loss per seed, tied / untied (same width) / matched (about the tied
    parameter count), and each variant's parameter count."""
    end = {k: np.asarray(v, dtype=float) for k, v in ends.items()}
    conditions = {
        "the control has about as many parameters (within 5%)": abs(counts["matched"] / counts["tied"] - 1)
        < 0.05
    }
    if full_size:
        conditions["untied, same width: ahead beyond the 95% interval"] = (
            t_interval(end["tied"] - end["untied"])[0] > 0
        )
        conditions["untied, same parameter count: ahead in every seed"] = _all(
            end["tied"] - end["matched"] > 0
        )
    return conditions


# ---- lesson 9: trained output tables ------------------------------------------------------


def untied_round_trip(
    top: np.ndarray,
    pinv_top: np.ndarray,
    median_rank: np.ndarray,
    vocab_size: int,
    prediction_gain: np.ndarray,
) -> Conditions:
    """Per seed: the share of tokens that `W E[t]` puts on top, the share through the
    pseudo-inverse of E, the median rank of t on its own round trip, and how far the trained W
    predicts the next token better than W's initial rows (held-out loss, nats, the same states h):
    the control that separates "training made no inverse" from "no training"."""
    return {
        "training made W a predictor of the next token (over 1 nat ahead of its initial rows)": bool(
            np.min(prediction_gain) > 1
        ),
        "the pseudo-inverse gives almost every token back: an inverse fits in width d": bool(
            np.min(pinv_top) > 0.9
        ),
        "the trained W returns t about as often as chance, not like an inverse": bool(
            np.max(top) < 20 / vocab_size
        ),
        "t ranks far from the top of its own round trip": bool(np.min(median_rank) > 0.25 * vocab_size),
    }


def input_and_output_rows_weakly_related(bridged_gain: np.ndarray) -> Conditions:
    """Per seed: the bridged cosine of a token's two rows minus that of shuffled pairs."""
    gain = np.asarray(bridged_gain, dtype=float)
    return {
        "input and output rows are related (over 0.05 above shuffled pairs), but weakly (under 0.5)": bool(
            0.05 < gain.min() and gain.max() < 0.5
        )
    }


def tied_round_trip_returns_the_token(
    runs: list[Mapping[str, np.ndarray]], untied_top: np.ndarray, vocab_size: int, most_win: bool
) -> Conditions:
    """One tied model's seeds. Each run: "rank" (of t when its row is scored by the model's output
    map, E E^T when tied), "top by half" (share on top in the longer half and in the shorter half
    of the rows), "echo" (how often the model predicts the token just read). most_win: also
    require that most tokens win their own row in every seed. (That a token loses its row only to
    a longer one is a theorem, Cauchy-Schwarz; the lesson checks it as an assert, not a verdict.)"""
    top = np.array([np.mean(r["rank"] == 0) for r in runs])
    conditions = {
        "the tied round trip gives the token back far more often than chance or the untied W": bool(
            top.min() > 5 * np.max(untied_top) and top.min() > 5 / vocab_size
        ),
        "long rows win their own row more often than short ones, every seed": all(
            r["top by half"][0] > r["top by half"][1] for r in runs
        ),
        "the model seldom predicts the token it just read (under 20%)": bool(
            max(r["echo"] for r in runs) < 0.2
        ),
    }
    if most_win:
        conditions["most tokens win their own row, every seed"] = bool(top.min() > 0.5)
    return conditions


def mean_and_interval(gaps: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """The mean of the gaps and its 95% bootstrap interval (2,000 resamples of the items)."""
    gaps = np.asarray(gaps, dtype=float)
    resampled = np.random.default_rng(seed).choice(gaps, (2000, len(gaps))).mean(axis=1)
    low, high = np.quantile(resampled, [0.025, 0.975])
    return float(gaps.mean()), float(low), float(high)


def function_words_share_more(
    overlap_gap_by_seed: np.ndarray,
    pooled: Mapping[str, tuple[float, float, float]],
    tinygpt_bridged: tuple[float, float, float] | None = None,
) -> Conditions:
    """Function words against frequency-matched content words, for one model: the mean overlap
    gap of each seed, and pooled (mean, low, high) intervals for "overlap" and "|E| / median";
    tinygpt_bridged: TinyGPT's pooled interval of the bridged-cosine gap (checked when given)."""
    conditions = {
        "in every seed function words' two neighbourhoods share more": bool(np.min(overlap_gap_by_seed) > 0),
        "pooled over the seeds, the overlap gap's interval is above zero": pooled["overlap"][1] > 0,
        "function words' input rows are the longer (interval above zero)": pooled["|E| / median"][1] > 0,
    }
    if tinygpt_bridged is not None:
        conditions["TinyGPT: function words' rows follow their input rows less (interval below zero)"] = (
            tinygpt_bridged[2] < 0
        )
    return conditions


def essays_function_words_share_more(overlap_gap: Mapping[str, np.ndarray]) -> Conditions:
    """The essay's own function words ("the", "a", "of", "and", "is") against the tokens nearest
    them in count: overlap_gap[model], per seed, the mean over the words of (the word's share of
    neighbours common to its two tables) minus (its partner's)."""
    return {
        f"{model}: the essay's function words share more neighbours than their partners in count (by over "
        "0.03, averaged over the seeds)": bool(np.mean(gap) > 0.03)
        for model, gap in overlap_gap.items()
    }


def no_gap_shown(gaps: np.ndarray, delta: float) -> tuple[bool, float, float]:
    """An equivalence verdict on pair gaps: (no gap shown, the bootstrap interval's lower end, the
    power to see a gap of 2 delta). It holds when the lower end is above -delta (a gap of delta
    in that direction is excluded) and the power is over 80% (normal approximation from the
    interval's width): an interval that merely contains zero is not enough."""
    _, low, high = mean_and_interval(gaps)
    standard_error = (high - low) / (2 * 1.96)
    if not standard_error > 0:
        return False, low, float("nan")
    power = 0.5 * (1 + math.erf((2 * delta / standard_error - 1.96) / math.sqrt(2)))
    return bool(low > -delta and power > 0.8), low, power


# ---- lesson 10: tying over training --------------------------------------------------------


def tied_compromise(
    curve: Mapping[tuple[str, str], np.ndarray],
    moved: Mapping[tuple[str, str], np.ndarray],
    windows: Mapping[str, int],
    frequent: str,
    rare: str,
    full_size: bool,
) -> Conditions:
    """The classifier's share of a tied row's gradient over a run, TinyLM against TinyGPT.
    curve[(model, band)]: (seeds, ledger windows) traffic shares; moved[(model, band)]: (seeds,
    windows, 2) displacement by the classifier and by the lookup; windows[model]: the number of
    ledger windows of the model's run (the curves are cut there, then split in thirds)."""
    short = {name: n for name, n in windows.items() if n < 3}
    if short:
        raise ValueError(
            f"tied_compromise: a run needs at least 3 ledger windows to split in thirds, got {short}"
        )
    run = _shares_by_third(curve, moved, windows)
    late = run["late"]
    conditions = {
        f"{name}: at first the classifier sends most to rare rows (over 85%)": bool(
            run["cut"][name, rare][:, 0].min() > 0.85
        )
        for name in windows
    }
    conditions["TinyLM, frequent rows: about even late in the run (35-65%)"] = bool(
        0.35 < late["TinyLM", frequent].min() and late["TinyLM", frequent].max() < 0.65
    )
    conditions["TinyLM, rare rows: later not overwhelmingly the classifier's (under 80%)"] = bool(
        late["TinyLM", rare].max() < 0.8
    )
    if not full_size:
        return conditions
    for band in (frequent, rare):
        conditions |= _tinygpt_leans_to_the_classifier(run, band)
    conditions["TinyGPT above TinyLM on frequent rows by under ten points (95% interval)"] = (
        welch_interval(late["TinyGPT", frequent], late["TinyLM", frequent])[1] < 0.1
    )
    conditions["not overwhelmingly the classifier's in TinyGPT either"] = bool(
        late["TinyGPT", rare].max() < 0.8 and late["TinyGPT", frequent].max() < 0.65
    )
    for name in windows:
        conditions[f"{name}: rare rows lean more to the classifier than frequent ones, every seed"] = bool(
            late[name, rare].min() > late[name, frequent].max()
        )
    return conditions


def _shares_by_third(curve: Mapping[tuple[str, str], np.ndarray], moved: Mapping[tuple[str, str], np.ndarray],
                     windows: Mapping[str, int]) -> ByThird:
    """tied_compromise's curves cut at each model's last window and read by thirds of the run, per
    (model, band) and seed: "cut" (the traffic shares), "late" and "middle" (their mean over the
    last and the middle third), "late_moved" (the classifier's share of the displacement, last
    third), "whole_run" (its share of the displacement over the whole run)."""
    cut = {key: np.asarray(c, dtype=float)[:, : windows[key[0]]] for key, c in curve.items()}
    cut_moved = {key: np.asarray(m, dtype=float)[:, : windows[key[0]]] for key, m in moved.items()}
    thirds = {name: np.array_split(np.arange(n), 3) for name, n in windows.items()}
    moved_share = {key: m[..., 0] / m.sum(axis=-1) for key, m in cut_moved.items()}
    return {
        "cut": cut,
        "late": {key: c[:, thirds[key[0]][2]].mean(axis=1) for key, c in cut.items()},
        "middle": {key: c[:, thirds[key[0]][1]].mean(axis=1) for key, c in cut.items()},
        "late_moved": {key: s[:, thirds[key[0]][2]].mean(axis=1) for key, s in moved_share.items()},
        "whole_run": {key: m[..., 0].sum(axis=1) / m.sum(axis=(1, 2)) for key, m in cut_moved.items()},
    }


def _tinygpt_leans_to_the_classifier(run: ByThird, band: str) -> Conditions:
    """TinyGPT's share for one band of rows at full size: flat late, after falling from the first
    window, above TinyLM's, told the same by what AdamW moves, and most of the row's movement."""
    gpt, late_moved = run["late"]["TinyGPT", band], run["late_moved"]["TinyGPT", band]
    paired = t_interval(late_moved - gpt)  # the same run's two shares: pairs
    return {
        f"TinyGPT, {band}: flat within 5 points (last third against the middle one)": bool(
            np.abs(gpt - run["middle"]["TinyGPT", band]).max() < 0.05
        ),
        f"TinyGPT, {band}: after falling 20 points from the first window": bool(
            gpt.max() < run["cut"]["TinyGPT", band][:, 0].min() - 0.2
        ),
        f"TinyGPT, {band}: leans further than TinyLM, every seed": bool(
            gpt.min() > run["late"]["TinyLM", band].max()
        ),
        f"TinyGPT, {band}: leans further than TinyLM (95% interval above zero)": (
            welch_interval(gpt, run["late"]["TinyLM", band])[0] > 0
        ),
        f"TinyGPT, {band}: what AdamW moves tells the same within 5 points": bool(
            np.abs(late_moved - gpt).max() < 0.05
        ),
        f"TinyGPT, {band}: what AdamW moves tells the same within 5 points (95% interval)": (
            -0.05 < paired[0] and paired[1] < 0.05
        ),
        f"TinyGPT, {band}: over the run the classifier moves most of the row": bool(
            run["whole_run"]["TinyGPT", band].min() > 0.5
        ),
    }


def paper_scale(held_out: Mapping[str, np.ndarray]) -> Conditions:
    """Held-out loss per seed after the same training of tied TinyLM "as built", with "the
    paper's sqrt(d)" scale on its lookup, and with a "unit table"."""
    built, paper, unit = (
        np.asarray(held_out[k], dtype=float) for k in ("TinyLM as built", "the paper's sqrt(d)", "unit table")
    )
    return {
        "every seed: the scaled lookup is ahead by more than 0.05 nats": bool((paper - built).max() < -0.05),
        "the unit table is far behind (over 0.3 nats), every seed": _all(unit > built + 0.3),
    }


def two_untied_maps(savings: Mapping[str, tuple[float, float, float]]) -> Conditions:
    """savings[model] = (one table's share as released, what tying saves of the untied model, the
    two maps' share of the untied model), from the published configurations."""
    two_maps = {name: s[2] for name, s in savings.items()}
    large_four = ("GPT-2 small", "Llama-2-7B", "Llama-3.2-1B", "Gemma-2B")
    return {
        "in none of GPT-2 small, Llama-2-7B, Llama-3.2-1B, Gemma-2B do two maps make up most of it": max(
            two_maps[m] for m in large_four
        )
        < 0.5,
        "in the small untied models (Pythia-70M, 160M) the two maps are most, or close to half": two_maps[
            "Pythia-70M"
        ]
        > 0.7
        and two_maps["Pythia-160M"] > 0.45,
        "in the 250,000-token models near a billion (BLOOM-560m, BLOOM-1b1, mT5-base) they are most": min(
            two_maps[m] for m in ("BLOOM-560m", "BLOOM-1b1", "mT5-base")
        )
        > 0.5,
    }


# ---- lesson 11: what the map looks like ------------------------------------------------------


def cone_in_tinylm(cones: Mapping[str, np.ndarray]) -> Conditions:
    """cones[table]: (seeds, [at init, trained, trained and centred]) mean cosine of TinyLM's
    "untied input map E", "untied output map W" and "tied table". (Whether the input map is
    learned at all is input_maps_learned's statement, asserted beside this one.)"""
    c = {name: np.asarray(x, dtype=float) for name, x in cones.items()}
    inputs, outputs, tied = (c[name][:, 1] for name in ("untied input map E", "untied output map W",
                                                          "tied table"))
    return {
        "centring lowers every table's mean cosine, every seed": all(
            _all(x[:, 2] < x[:, 1]) for x in c.values()),
        "the output map forms a cone (over 0.1), every seed": _all(outputs > 0.1),
        "output map, then tied table, then input map, every seed": bool(
            outputs.min() > tied.max() and tied.min() > inputs.max()),
        "the untied input map forms no cone (under 0.05)": _all(inputs < 0.05),
        "centring removes every cone (within 0.02 of zero)": all(
            _all(np.abs(x[:, 2]) < 0.02) for x in c.values()),
    }


def frequency_axis_in_tinylm(
    rho_pc1: Mapping[str, np.ndarray], rho_other: Mapping[str, np.ndarray]
) -> Conditions:
    """Per table, per seed: |Spearman| of PC1 with log-frequency, and the best of PC2-5."""
    conditions = {}
    for name in ("untied output map W", "tied table"):
        conditions[f"{name}: PC1 follows frequency (over 0.6) and no other component does as well"] = bool(
            np.min(rho_pc1[name]) > 0.6 and np.min(rho_pc1[name]) > np.max(rho_other[name]))
    conditions["the untied input map's PC1 does not follow frequency (under 0.3)"] = bool(
        np.max(rho_pc1["untied input map E"]) < 0.3)
    return conditions


def input_table_settles_last(at_quarter: Mapping[str, np.ndarray]) -> Conditions:
    """TinyLM at a quarter of its run, per seed: the share done of the held-out improvement
    ("progress") and of each table's change in "structure" and "neighbours" ("... done input map
    E", "... done output map W"). The claim "the map settles early" would make these fail."""
    q = {key: np.asarray(x, dtype=float) for key, x in at_quarter.items()}
    conditions = {}
    for kind in ("structure", "neighbours"):
        table = q[f"{kind} done input map E"]
        conditions[f"the loss is further along than the input table's {kind}, every seed"] = _all(
            table < q["progress"])
        conditions[f"the input table's {kind} is less settled than the output map's, every seed"] = _all(
            table < q[f"{kind} done output map W"])
    conditions["most of the input table's neighbourhood change is still to come"] = _all(
        q["neighbours done input map E"] < 0.5)
    return conditions


# ---- lesson 14: settling and freezing --------------------------------------------------------


def freezing_cost_share(before: np.ndarray, trained: np.ndarray, frozen: np.ndarray) -> np.ndarray:
    """What freezing the input table gives up, as a share of what fine-tuning gains, per seed:
    (frozen - trained) / (before - trained), from the held-out losses before fine-tuning and after
    it with the table trained or frozen. An error when fine-tuning with the table trained did
    not lower the loss in some seed (then there is no gain to take a share of)."""
    before, trained, frozen = (np.asarray(x, dtype=np.float64) for x in (before, trained, frozen))
    if not before.shape == trained.shape == frozen.shape:
        raise ValueError(f"freezing_cost_share: before {before.shape}, trained {trained.shape} and frozen "
                         f"{frozen.shape} must have one loss per seed each")
    gain = before - trained
    if not np.all(gain > 0):
        raise ValueError(f"freezing_cost_share: fine-tuning with the table trained must lower the held-out "
                         f"loss in every seed; before - trained = {np.round(gain, 4).tolist()}")
    return (frozen - trained) / gain


def freezing_is_free(cost_share: np.ndarray, tolerance: float = 0.05) -> Conditions:
    """The claim "freezing costs nothing": in every seed freezing gives up less than `tolerance`
    of what fine-tuning gains (ending ahead counts as free). A NaN share never holds."""
    share = np.asarray(cost_share, dtype=np.float64)
    return {f"in every seed freezing gives up under {tolerance:.0%} of what fine-tuning gains":
            _all(share < tolerance)}


def freezing_is_not_free(cost_share: np.ndarray, at_least: float = 0.1) -> Conditions:
    """The opposite verdict, with a margin: in every seed freezing gives up over `at_least` of
    what fine-tuning gains. A NaN never holds."""
    share = np.asarray(cost_share, dtype=np.float64)
    return {f"in every seed freezing gives up over {at_least:.0%} of what fine-tuning gains":
            _all(share > at_least)}


def frozen_table_matters(random_share: np.ndarray, freezing_share: np.ndarray) -> Conditions:
    """The control of "freezing is free": per seed, what a table kept at its random start through
    pretraining and fine-tuning gives up, and what freezing the pretrained table gives up, each as
    a share of fine-tuning's gain (freezing_cost_share). Freezing is free *because the table is
    done* only if the table matters: a random one must cost far more. A NaN never holds."""
    random_share = np.asarray(random_share, np.float64)
    freezing_share = np.asarray(freezing_share, np.float64)
    return {
        "a table kept random gives up over half of fine-tuning's gain, every seed": _all(random_share > 0.5),
        "ten times what freezing the trained table gives up, or more": _all(
            random_share > 10 * np.maximum(freezing_share, 0.01)),
    }


def ahead_of_the_loss(geometry_done: np.ndarray, loss_done: np.ndarray) -> Conditions:
    """The claim "the map settles early", at one step: in every seed the table has made a larger
    share of its change in geometry than the held-out loss has of its improvement (both from
    share_done). A NaN never holds."""
    geometry_done, loss_done = np.asarray(geometry_done, np.float64), np.asarray(loss_done, np.float64)
    if geometry_done.shape != loss_done.shape:
        raise ValueError(f"ahead_of_the_loss: geometry_done {geometry_done.shape} and loss_done "
                         f"{loss_done.shape} must have one value per seed each")
    return {"in every seed the geometry is further along than the loss": _all(geometry_done > loss_done)}


# ---- lesson 12: the map in a transformer -----------------------------------------------------


def input_maps_learned(worth: Mapping[str, np.ndarray]) -> Conditions:
    """worth[model]: per seed, the held-out loss of the untied model with its input map's initial
    rows put back, minus its loss as trained. What a verdict says about an input map's geometry
    (no cone, no frequency axis) is a statement about training only if this is large: a table
    put back to its random rows would pass the geometry statements too."""
    return {
        f"{model}: the untied input map is learned (its initial rows put back cost over 0.3 nats)": bool(
            np.min(worth[model]) > 0.3
        )
        for model in worth
    }


def cones_in_a_transformer(
    raw: Mapping[tuple[str, str], np.ndarray],
    spreads: Mapping[tuple[str, str], np.ndarray],
    worth: Mapping[str, np.ndarray],
    full_size: bool,
) -> Conditions:
    """raw[(model, table)]: the trained table's mean cosine per seed, for "input map E", "output
    map W" and "tied table" of "TinyLM" and "TinyGPT"; spreads[(model, table)]: (seeds, [at init,
    trained]) standard deviation of the cosines; worth: see input_maps_learned. Each tied cone is
    placed, seed by seed, on the way from the same model's input map's cone (0) to its output
    map's (1)."""
    raw = {k: np.asarray(v, dtype=float) for k, v in raw.items()}
    conditions = input_maps_learned(worth) if full_size else {}  # short runs barely train the input maps
    for model in ("TinyLM", "TinyGPT"):
        conditions[f"{model}: the untied input map forms no cone (under 0.05)"] = bool(
            raw[model, "input map E"].max() < 0.05
        )
        conditions[f"{model}: the output map's cone is far narrower than the input map's, every seed"] = bool(
            raw[model, "output map W"].min() > 4 * raw[model, "input map E"].max()
        )
    if full_size:
        side = output_side(raw)
        for key in [("TinyLM", "output map W"), ("TinyGPT", "output map W"), ("TinyGPT", "tied table")]:
            conditions[f"{key[0]} {key[1]}: a narrow cone (over 0.25) in every seed"] = bool(
                raw[key].min() > 0.25
            )
        conditions["TinyGPT's tied cone is nearly its own output map's (over 80% of the way)"] = bool(
            side["TinyGPT"].min() > 0.8
        )
        conditions["TinyLM's tied cone stops well short of its own output map's (under 60%)"] = bool(
            side["TinyLM"].max() < 0.6
        )
        gpt_input = np.asarray(spreads["TinyGPT", "input map E"], dtype=float)
        conditions["TinyGPT's input rows have moved far from random (spread over twice its start)"] = bool(
            gpt_input[:, 1].min() > 2 * gpt_input[:, 0].max()
        )
    return conditions


def output_side(raw: Mapping[tuple[str, str], np.ndarray]) -> dict[str, np.ndarray]:
    """Per model and seed: where the tied table's cone sits between the same model's input map's
    cone (0) and its output map's (1)."""
    return {
        model: (np.asarray(raw[model, "tied table"]) - np.asarray(raw[model, "input map E"]))
        / (np.asarray(raw[model, "output map W"]) - np.asarray(raw[model, "input map E"]))
        for model in ("TinyLM", "TinyGPT")
    }


def frequency_axes_in_a_transformer(
    rho_pc1: Mapping[tuple[str, str], np.ndarray],
    rho_other: Mapping[tuple[str, str], np.ndarray],
    pc1_share: Mapping[tuple[str, str], np.ndarray],
    worth: Mapping[str, np.ndarray],
    full_size: bool,
) -> Conditions:
    """Per (model, table), per seed: |Spearman| of PC1 with log-frequency, the best of PC2-5, and
    PC1's share of the variance; worth: see input_maps_learned."""
    conditions = input_maps_learned(worth) if full_size else {}  # short runs barely train the input maps
    for model in ("TinyLM", "TinyGPT"):
        conditions[f"{model}: the input map's PC1 does not follow frequency (under 0.3)"] = bool(
            np.max(rho_pc1[model, "input map E"]) < 0.3
        )
        for table in ("output map W", "tied table"):
            key = (model, table)
            conditions[f"{model} {table}: PC1 is the component that follows frequency"] = bool(
                np.min(rho_pc1[key]) > np.max(rho_other[key])
            )
            if full_size:
                conditions[f"{model} {table}: PC1 follows log-frequency closely (over 0.8), every seed"] = (
                    bool(np.min(rho_pc1[key]) > 0.8)
                )
    if full_size:
        conditions["TinyGPT's input map has a strong first axis, TinyLM's does not (over twice)"] = bool(
            np.min(pc1_share["TinyGPT", "input map E"]) > 2 * np.max(pc1_share["TinyLM", "input map E"])
        )
    return conditions


def words_used_alike(grouping: Mapping[tuple[str, str], np.ndarray], chance_count: float) -> Conditions:
    """grouping[(model, table)]: (seeds, [raw, centred, whitened], [share of a group member's
    nearest neighbours in its own group, the same for frequency-matched stand-ins, share of
    neighbours within a factor 2 of the token's count]); chance_count: that last share for any
    two tokens. Tables: "input map E", "output map W", "tied table"."""
    g = {key: np.asarray(x, dtype=float) for key, x in grouping.items()}
    scoring = [key for key in g if key[1] != "input map E"]  # the tables that score tokens
    conditions = {
        f"{model} {table}: words group with their kind, over twice their stand-ins (centred), every seed":
            _all(x[:, 1, 0] > 2 * x[:, 1, 1])
        for (model, table), x in g.items()
    }
    conditions["raw, output maps' and tied tables' neighbours share a count more than chance (+0.1)"] = all(
        _all(g[key][:, 0, 2] > chance_count + 0.1) for key in scoring)
    conditions["centring raises the grouping in every output map and tied table, every seed"] = all(
        _all(g[key][:, 1, 0] > g[key][:, 0, 0]) for key in scoring)
    conditions["whitening brings their neighbours' counts nearer chance than centring, every seed"] = all(
        _all(g[key][:, 2, 2] < g[key][:, 1, 2]) for key in scoring)
    conditions["whitening costs part of the grouping: below centring, every table and seed"] = all(
        _all(x[:, 2, 0] < x[:, 1, 0]) for x in g.values())
    return conditions


def busiest_to_quietest_on_real_text(ratios: Mapping[str, float | np.ndarray]) -> Conditions:
    """One text's update ratios: "whole" (busiest count / quietest seen count, every distinct
    token), "quietest" (that count), "quarters" (each quarter alone), "top" (within the 1,999
    most frequent, for the whole and each quarter)."""
    return {
        "some token is seen once, so the ratio is the busiest count": ratios["quietest"] == 1,
        "four times the text, over three times the ratio": bool(
            ratios["whole"] > 3 * np.max(ratios["quarters"])
        ),
        "far from a million to one": bool(ratios["whole"] < 1e6),
        "with the lessons' vocabulary, thousands to one (under 10,000)": bool(np.max(ratios["top"]) < 10_000),
    }


# ---- lesson 13: analogy arithmetic ------------------------------------------------------------


def gaps_over_the_questions(gap: Mapping[str, np.ndarray], uneven: np.ndarray) -> Conditions:
    """95% intervals over the questions (bootstrap) of skip-gram's share right minus TinyGPT's:
    "equal text", "all questions", "male : female"; uneven: the interval of TinyGPT's kept share
    on "present : past" minus that on "male : female"."""
    return {
        "at equal text skip-gram's input table answers more": gap["equal text"][0] > 0,
        "after 1.5 passes TinyGPT's input table still answers fewer": gap["all questions"][0] > 0,
        "on the semantic group the gap holds for the questions too": gap["male : female"][0] > 0,
        "TinyGPT falls further behind on male : female than on tense": uneven[0] > 0,
    }


def skipgram_ahead_at_equal_text(
    skipgram_share, tinygpt_share, skipgram_rank, tinygpt_rank, ratio: float
) -> Conditions:
    """Per seed, after the same amount of text: the share of questions answered and the median
    rank of the right word, skip-gram against TinyGPT."""
    return {
        f"equal text: skip-gram answers over {ratio}x as many, each seed": bool(
            np.min(skipgram_share) > ratio * np.max(tinygpt_share)
        ),
        "and its median rank is under half TinyGPT's": bool(np.max(skipgram_rank) < np.min(tinygpt_rank) / 2),
    }


def the_tower_and_analogies(
    input_row: np.ndarray, last_block: np.ndarray, random_table: np.ndarray
) -> Conditions:
    """Per seed, the share of the analogy questions answered right (raw or centred, the better) by
    TinyGPT's input table and by each word's state after the last block averaged over the places
    it occurs; random_table: a random table's share."""
    input_row, last_block = np.asarray(input_row, float), np.asarray(last_block, float)
    return {
        "a word's state after the last block answers no more than its input row (at most 3 points "
        "more), every seed": _all(last_block < input_row + 0.03),
        "and still holds analogy structure (over 5% of the questions and 5 times a random table's "
        "share), every seed": _all(last_block > max(0.05, 5 * np.max(random_table))),
    }


def output_tables_as_embeddings(
    skipgram_input: np.ndarray,
    skipgram_output: np.ndarray,
    gpt_output: np.ndarray,
    gpt_output_rank: np.ndarray,
    random_table: np.ndarray,
) -> Conditions:
    """Per seed, the share of analogy questions answered right by skip-gram's input and output
    tables and TinyGPT's output map, with the output map's median rank of the right word."""
    sg_in, sg_out, gpt_out = (np.asarray(x, float) for x in (skipgram_input, skipgram_output, gpt_output))
    return {
        "skip-gram's output table answers over 70% as many as its input table, every seed": _all(
            sg_out > 0.7 * sg_in),
        "TinyGPT's output map answers far more than a random table (over 5%), every seed": _all(
            gpt_out > max(0.05, 10 * np.max(random_table))),
        "and ranks the right word near the top (median rank under 50), every seed": _all(
            np.asarray(gpt_output_rank) < 50),
    }


def frequency_in_static_tables(skipgram_input: np.ndarray, skipgram_output: np.ndarray) -> Conditions:
    """Per table, (seeds, [cone, centred cone, |rho| of PC1, best of PC2-5, PC1's share, |rho| of
    the length along the mean row]), |rho| against log count."""
    conditions = {}
    for name, g in (("input", skipgram_input), ("output", skipgram_output)):
        g = np.asarray(g, dtype=float)
        conditions[
            f"skip-gram {name} table: PC1 does not follow frequency (under 0.1, below PC2-5's best)"
        ] = bool(g[:, 2].max() < 0.1 and g[:, 2].max() < g[:, 3].min())
    conditions["the output table's length along its mean row follows frequency (over 0.5)"] = bool(
        np.min(np.asarray(skipgram_output)[:, 5]) > 0.5
    )
    conditions["the input table's, weakly (under 0.3)"] = bool(np.max(np.asarray(skipgram_input)[:, 5]) < 0.3)
    return conditions
