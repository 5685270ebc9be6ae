# %% [markdown]
# # Lesson 9: Trained output tables
#
# Lesson 5's questions asked of trained tables: whether the output map undoes the lookup, and
# whether function words' input and output rows differ more than other words'.
#
# ## What you will see
#
# Lesson 5 showed, on random tables, that reading a token's row and scoring it with the output
# map need not give the token back. Here we train the models of lesson 8, untied, so that each
# has its own input table `E` and output map `W`, and ask the trained tables:
#
# - Does the round trip `E[t] -> W E[t]` put `t` on top? A least-squares inverse exists in the
#   same width; does training find it? (TinyLM and TinyGPT, three seeds each.)
# - How are a token's input row and output row related, through the best linear bridge and
#   directly?
# - The essay singles out function words ("the", "of", "and"): is their input row conspicuously
#   unlike their output row, compared with content words of the same frequency?
# - The caveat is about one table in both roles, so the round trip again on the same models
#   trained tied: how often `E E^T` gives the token back, why, and what that does not mean.
#
# The models are lesson 8's, built and trained the same way: on your pieces of lessons 4 to 8
# (the lookup, cross-entropy, the tie, AdamW's row arithmetic, the training step) where your
# copies pass their checks, else on minigrad's. The first lines of the run say whose.
#
# Figures quoted in the text come from the full-size run, `minigrad lesson 9 --no-pause`
# (three seeds, min-max, unless a paragraph names another command). The small run
# (`--small`, what the tests run) prints its own, smaller figures and says which verdicts it
# does not test.

# %%
import keyword
import os

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn.course import model_pieces, yours
from minigrad.learn.data import Vocabulary, load_text, tokenize
from minigrad.learn.kit import (
    function_words_share_more,
    hold,
    input_and_output_rows_weakly_related,
    mean_and_interval,
    no_gap_shown,
    predicts_every_position,
    setup,
    tables_of,
    tied_round_trip_returns_the_token,
    train_on_text,
    unit_rows,
    untied_round_trip,
)
from minigrad.learn.kit import rank_of_self as minigrads_rank_of_self
from minigrad.learn.train import split_windows
from minigrad.models import TinyGPT, TinyLM

lesson = setup(9, minutes=(2.0, 0.2))  # caps BLAS threads, draws headless, makes OUT
rng = np.random.default_rng(9)
mine = model_pieces(9)  # the models train on your pieces of lessons 4-8 that pass their checks
own = yours(9)  # your rank_of_self from minigrad-exercises/, if it passes `minigrad check 9`
rank_of_self = own.get("rank_of_self", minigrads_rank_of_self)

# %% [markdown]
# ## The round trip on trained tables
#
# Lesson 5's random tables are one thing; the claim is about trained ones. We train lesson 8's
# model untied on lesson 8's text (the Python reference manual, the 2,000 most frequent words), and
# beside it an untied `TinyGPT` (lesson 8's vocabulary, two transformer blocks), each from
# three seeds. Then we take each model's input table `E` and output map `W`, both `(V, d)`, and
# ask three things of them.
#
# - **Round trip.** Read token `t` (`E[t]`) and score it straight away with the output map:
#   does `t` get the top score of `W E[t]`? We record where `t` ranks (0 is the top): how many
#   tokens score higher than `t` on its own row. Counting that is this lesson's exercise,
#   `rank_of_self(read, score)` (at the end); once yours passes `minigrad check 9`, every rank
#   in this lesson is counted by yours, else by minigrad's.
# - **The map that would invert the lookup.** The least-squares inverse of the lookup is the
#   pseudo-inverse: `W* = (E^+)^T = E (E^T E)^-1`, which makes the round trip `E E^+`, a
#   projection of rank `d`. It cannot be the identity, but the question is only whether `t`
#   wins its own row. If the trained `W` were an inverse of `E`, it would look like `W*`.
# - **Same token, two rows.** The two tables need not share coordinates: in TinyLM the output
#   map reads a state that two layers built from the looked-up rows, so comparing `E[t]` and
#   `W[t]` entry by entry means nothing. So we fit the best linear bridge `M` (`d x d`, least
#   squares, rows centred) taking input rows to output rows on half of the vocabulary, and
#   measure on the other half how well `E[t] M` points along `W[t]` (the cosine). The baseline
#   is the same fit with the output rows shuffled, so that each input row is paired with another
#   token's output row. In TinyGPT the token's row is added into the residual stream and the
#   output map reads that stream (after a layer norm, which centres and rescales the vector and
#   weighs each coordinate, but leaves every coordinate where it was), so there the plain cosine
#   of `E[t]` and `W[t]` is meaningful too.

# %% [markdown]
# ## Predict first
#
# In the trained TinyLM, for how many of the 2,000 tokens does `W E[t]` give `t` its top
# score: about 1 (chance), about a tenth, or nearly all? And with the pseudo-inverse `W*` in
# place of `W`: about chance, about a half, or nearly all?

# %%
S = lesson.sizes(  # lesson 8's two models, untied; lesson 8 trains TinyLM for 3,000 steps
    full=dict(vocab=2000, held_out_stride=1, tied_held_out_stride=8,
              lm=dict(width=64, hidden=128, steps=2000, batch=128),
              gpt=dict(width=64, heads=4, layers=2, context=32, steps=600, batch=16)),
    small=dict(vocab=500, held_out_stride=8, tied_held_out_stride=8,
              lm=dict(width=32, hidden=64, steps=150, batch=64),
              gpt=dict(width=32, heads=2, layers=1, context=8, steps=40, batch=16)),
)
SEEDS = (0, 1, 2)
text_words = tokenize(load_text(os.environ.get("MINIGRAD_TEXT")))
text_vocab = Vocabulary.build(text_words, max_size=S.vocab)
text_ids = text_vocab.encode(text_words)
vocab_size = len(text_vocab)
MODELS = {  # name -> (build(seed, tied): built untied, tied with your tie_weights once it passes, ...
    "TinyLM": (lambda seed, tied=False: mine.build(TinyLM(vocab_size, S.lm["width"], S.lm["hidden"], 3,
                                                          tied=False, rng=seed), tied), 3, S.lm),
    "TinyGPT": (lambda seed, tied=False: mine.build(TinyGPT(vocab_size, S.gpt["context"], S.gpt["width"],
                                                            S.gpt["heads"], S.gpt["layers"], tied=False,
                                                            rng=seed), tied), S.gpt["context"], S.gpt),
}  # ... its context, and its run's steps and batch


def trained_untied(kind: str, seed: int) -> dict:
    """Train one untied model on the text: its tables E and W (V, d) as float64, and held-out loss."""
    build, context, run = MODELS[kind]
    model = build(seed)
    history = train_on_text(model, text_ids, context=context, steps=run["steps"], batch_size=run["batch"],
                            seed=seed, held_out_stride=S.held_out_stride, label=f"{kind:<7} seed {seed}",
                            pieces=mine)
    return {**tables_of(model), "loss": (history.valid_loss[0], history.valid_loss[-1])}


# %%
def bridged_cosines(E: np.ndarray, W: np.ndarray) -> np.ndarray:
    """(V,): cos(E[t] M, W[t]), with M (d, d) the least-squares map from centred E to centred W
    fitted on the other half of the tokens (the even ids predict the odd ones and back)."""
    E, W = E - E.mean(axis=0), W - W.mean(axis=0)
    even = np.arange(len(E)) % 2 == 0
    predicted = np.empty_like(W)
    for fit in (even, ~even):
        bridge = np.linalg.lstsq(E[fit], W[fit], rcond=None)[0]
        predicted[~fit] = E[~fit] @ bridge
    return np.sum(unit_rows(predicted) * unit_rows(W), axis=1)


def round_trip_measures(E: np.ndarray, W: np.ndarray, shuffle: np.ndarray) -> dict[str, np.ndarray]:
    """Per token: its rank through W and through the pseudo-inverse, and its two rows' cosines."""
    return {"rank": rank_of_self(E, W), "pinv rank": rank_of_self(E, np.linalg.pinv(E).T),
            "bridged": bridged_cosines(E, W), "bridged, shuffled": bridged_cosines(E, W[shuffle]),
            "direct": np.sum(unit_rows(E) * unit_rows(W), axis=1),
            "direct, shuffled": np.sum(unit_rows(E) * unit_rows(W[shuffle]), axis=1)}


def spread(kind: str, measure) -> tuple[float, float]:
    """(min, max) over the seeds of measure(run)."""
    values = [measure(r) for r in runs[kind].values()]
    return min(values), max(values)


# %%
runs = {kind: {seed: trained_untied(kind, seed) for seed in SEEDS} for kind in MODELS}
shuffle = np.random.default_rng(55).permutation(vocab_size)  # pairs each token with another's row
for by_seed in runs.values():
    for r in by_seed.values():
        r.update(round_trip_measures(r["E"], r["W"], shuffle))

print(f"V = {vocab_size:,}; chance of a top score is 1/V = {1 / vocab_size:.4f}, a random rank's median "
      f"{(vocab_size - 1) / 2:.0f}")
print(f"{'model':<8} {'seed':>4} {'held-out loss':>15} {'W E[t]: top':>12} {'median rank':>12} "
      f"{'W*: top':>8} {'bridged cos':>12} {'shuffled':>9} {'plain cos':>10} {'shuffled':>9}")
for kind, by_seed in runs.items():
    for seed, r in by_seed.items():
        print(f"{kind:<8} {seed:>4} {r['loss'][0]:>6.2f} -> {r['loss'][1]:.2f} "
              f"{np.mean(r['rank'] == 0):>12.4f} {np.median(r['rank']):>12.0f} "
              f"{np.mean(r['pinv rank'] == 0):>8.3f} "
              f"{r['bridged'].mean():>12.3f} {r['bridged, shuffled'].mean():>9.3f} "
              f"{r['direct'].mean():>10.3f} {r['direct, shuffled'].mean():>9.3f}")


# %%
weak_link_tested = lesson.verdict_tested("input and output rows are related, but weakly (the small run's "
                                         "250 fitting rows are too few for a 32 x 32 bridge)")
for kind in runs:  # the checks: named functions in minigrad/learn/kit/verdicts.py
    top = spread(kind, lambda r: np.mean(r["rank"] == 0))
    pinv_top = spread(kind, lambda r: np.mean(r["pinv rank"] == 0))
    median = spread(kind, lambda r: np.median(r["rank"]))
    gain = spread(kind, lambda r: r["bridged"].mean() - r["bridged, shuffled"].mean())
    print(f"{kind}, min-max over {len(SEEDS)} seeds: t on top for {top[0]:.2%}-{top[1]:.2%} of tokens "
          f"(median rank {median[0]:.0f}-{median[1]:.0f}); with W*: {pinv_top[0]:.1%}-{pinv_top[1]:.1%}; "
          f"bridged cosine above the shuffled pairing by {gain[0]:.3f}-{gain[1]:.3f}")
    hold(untied_round_trip(top, pinv_top, median, vocab_size), where=kind)
    if weak_link_tested:
        hold(input_and_output_rows_weakly_related(gain), where=kind)


# %%
def round_trip_picture(ax, scores: np.ndarray, labels: list[str], title: str) -> None:
    """One heat map of a round trip's scores (rows: the token read; columns: the token scored),
    each row standardised so that a red diagonal means t outscores the others on its own row."""
    z = (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, keepdims=True)
    ax.imshow(z, cmap="RdBu_r", vmin=-3, vmax=3)
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
    ax.set_yticks(range(len(labels)), labels, fontsize=6)
    ax.set_title(title, fontsize=9)


shown = np.arange(1, 31)  # the 30 most frequent tokens after <unk>
labels = [text_vocab.words[i] for i in shown]
lm0, gpt0 = runs["TinyLM"][SEEDS[0]], runs["TinyGPT"][SEEDS[0]]
fig, axes = plt.subplots(1, 3, figsize=(13, 4.9))
pictures = [(lm0["E"], np.linalg.pinv(lm0["E"]).T, "TinyLM's E read back by W* = pinv(E)^T"),
            (lm0["E"], lm0["W"], "TinyLM: E read back by its trained W"),
            (gpt0["E"], gpt0["W"], "TinyGPT: E read back by its trained W")]
for ax, (E, W, title) in zip(axes, pictures):
    round_trip_picture(ax, (E @ W.T)[np.ix_(shown, shown)], labels, title)
axes[0].set_ylabel("token read, t (row E[t])")
for ax in axes:
    ax.set_xlabel("token scored, j (row W[j])", fontsize=8)
fig.suptitle("Round trip E[t] -> scores W E[t] on trained tables (each row standardised; red: high)")
lesson.save(fig, "trained_round_trip.png",
            "the round trip on trained tables for the 30 commonest tokens: the pseudo-inverse puts each "
            "token on its own diagonal; the trained output maps do not")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, kind in zip(axes, runs):
    bins = np.linspace(-1, 1, 61)
    for key, style in (("bridged", "-"), ("bridged, shuffled", ":")):
        values = np.concatenate([r[key] for r in runs[kind].values()])
        ax.hist(values, bins=bins, histtype="step", ls=style, density=True,
                label=f"{'same token' if key == 'bridged' else 'shuffled pairs'}: mean {values.mean():.3f}")
    ax.set(xlabel="cos(E[t] M, W[t]) on held-out tokens", title=f"{kind}, {len(SEEDS)} seeds")
    ax.legend(fontsize=8)
axes[0].set_ylabel("density")
lesson.save(fig, "input_row_vs_output_row.png",
            "how far a linear map of a token's input row points along its own output row, against "
            "shuffled pairs")

# %% [markdown]
# On trained tables the answer is the same, and it now means more, because here an inverse
# was available. Min-max over three seeds at full size:
#
# - The pseudo-inverse `W*` gives back 100% of TinyLM's 2,000 tokens and 99.3-99.5% of
#   TinyGPT's: a rank-64 projection is far from the identity, but each token still wins its own
#   row. So a width of 64 is no obstacle.
# - The trained output maps give back one token in 2,000 (TinyLM, every seed: chance) and two
#   (TinyGPT, every seed). The token itself lands at a median rank of 970-1,025 in TinyLM, where
#   a random rank's median is 1,000, and 697-785 in TinyGPT: a little better than chance, no
#   more. The heat maps show it: the pseudo-inverse's round trip is a diagonal; the trained
#   ones have none, only columns (tokens that score high whatever was read) and blocks.
# - The two rows of one token are related, weakly. Through the linear bridge fitted on the other
#   half of the vocabulary, a token's input row points along its own output row with a mean
#   cosine of 0.122-0.128 (TinyLM) and 0.202-0.229 (TinyGPT), against -0.018 to -0.001 for
#   shuffled pairs. In TinyGPT, whose two tables share the residual stream's coordinates, even
#   the plain cosine is 0.028-0.044, against -0.018 to -0.003 for shuffled pairs; in TinyLM it
#   is zero, as it should be with no shared coordinates.
#
# The concept page says unembedding "is not a geometric inverse of embedding", and the trained
# tables agree: training never asks for one. The output map learns to score the *next* token,
# and the next token is seldom the one just read; the rows line up only as far as the two jobs
# overlap.
#
# ## Function words and content words
#
# The essay singles out function words: as input, " the" tells the model that a determiner
# has arrived; as output, its row must describe the states that come just before a determiner.
# It says "for function words they are conspicuously not" the same list of numbers. We test
# that on the same six trained models, comparing per token:
#
# - **neighbourhood overlap**: of the token's 10 nearest neighbours in the input table and its
#   10 in the output map (cosine after centring each table, as lesson 11 recommends), the share
#   that are the same tokens. It needs no common coordinates. Chance is `10 / (V - 1)`, 0.5%.
# - the **bridged cosine** of the first step, `cos(E[t] M, W[t])`;
# - each row's **length**, relative to the median length in its table.
#
# Function words (determiners, prepositions, conjunctions, pronouns, auxiliary verbs: a fixed
# list of 114, of which 100 are in the vocabulary at full size; those that are also Python
# keywords, such as `if` and `is`, stay function words) are also the most frequent words, and
# frequency alone shapes both tables (lesson 11). So every function word is paired with the
# content word nearest to it in frequency (within a factor of 1.5; a content word here is any
# other alphabetic token of three letters or more that is not a Python keyword), and we
# compare the pairs. The commonest function words, such as " the", have no content word that
# frequent and drop out.

# %% [markdown]
# ## Predict first
#
# At the same frequency, whose two rows are more alike, by neighbourhood overlap: the function
# word's or the content word's?

# %%
FUNCTION_WORDS = frozenset("""
a an the this that these those some any each every no all both either neither such
of in to for from with by at on into onto over under about after before between through during
without within among against upon than as like
and or but nor so if then else when while because although though unless whether
is are was were be been being am has have had do does did will would can could may might must
shall should it its they them their there here which who whom whose what where how not also
only very too we you he she i me my our your his her us one""".split())
PYTHON_KEYWORDS = frozenset(word.lower() for word in keyword.kwlist)
NEIGHBOURS = 10
counts = text_vocab.counts
is_function = np.array([w in FUNCTION_WORDS for w in text_vocab.words])
is_content = np.array([w.isalpha() and len(w) >= 3 and w not in FUNCTION_WORDS and w not in PYTHON_KEYWORDS
                       for w in text_vocab.words])


# %%
def frequency_matched_pairs(within: float = 1.5) -> np.ndarray:
    """(P, 2) ids: each function word, commonest first, with the unused content word nearest to
    it in log count, kept if their counts differ by less than a factor `within`."""
    log_count = np.log(np.maximum(counts, 1))
    free = set(np.flatnonzero(is_content).tolist())
    pairs = []
    for f in sorted(np.flatnonzero(is_function), key=lambda i: -counts[i]):
        c = min(free, key=lambda i: (abs(log_count[i] - log_count[f]), i))
        if abs(log_count[c] - log_count[f]) < np.log(within):
            free.discard(c)
            pairs.append((f, c))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def nearest_neighbours(table: np.ndarray) -> np.ndarray:
    """(V, NEIGHBOURS) ids of each row's nearest other rows by cosine, the table centred first."""
    u = unit_rows(table - table.mean(axis=0))
    cosines = u @ u.T
    np.fill_diagonal(cosines, -np.inf)
    return np.argpartition(-cosines, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]


def neighbour_overlap(E: np.ndarray, W: np.ndarray) -> np.ndarray:
    """(V,): the share of a token's nearest neighbours in E that are also its neighbours in W."""
    return np.array([np.intersect1d(a, b).size for a, b in zip(nearest_neighbours(E), nearest_neighbours(W))]
                    ) / NEIGHBOURS


def pair_gaps(values: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """(P,): values[function word] - values[content word], pair by pair."""
    return values[pairs[:, 0]] - values[pairs[:, 1]]


# mean_and_interval(gaps): the mean of the pair gaps and its 95% bootstrap interval (2,000
# resamples of the pairs), from minigrad/learn/kit/verdicts.py


# %%
pairs = frequency_matched_pairs()
ratio = counts[pairs[:, 0]] / counts[pairs[:, 1]]
unpaired = sorted(set(np.flatnonzero(is_function)) - set(pairs[:, 0]), key=lambda i: -counts[i])
print(f"{is_function.sum()} function words and {is_content.sum():,} content words in the vocabulary; "
      f"{len(pairs)} frequency-matched pairs (count ratio {ratio.min():.2f}-{ratio.max():.2f}, median "
      f"{np.median(ratio):.2f}); too common to pair: {' '.join(text_vocab.words[i] for i in unpaired)}")
print("for example:", ", ".join(f"{text_vocab.words[f]} ({counts[f]}) ~ {text_vocab.words[c]} ({counts[c]})"
                                for f, c in pairs[::max(1, len(pairs) // 6)]))

# %%
MEASURES = ("overlap", "bridged", "|E| / median", "|W| / median")
for by_seed in runs.values():
    for r in by_seed.values():
        r["overlap"] = neighbour_overlap(r["E"], r["W"])
        for key, table in (("|E| / median", r["E"]), ("|W| / median", r["W"])):
            lengths = np.linalg.norm(table, axis=1)
            r[key] = lengths / np.median(lengths)

print(f"\nfunction minus content word, mean over {len(pairs)} pairs [95% bootstrap interval]; 'all': "
      "each pair's gap averaged over the seeds first")
print(f"{'model':<8} {'seed':>4} " + " ".join(f"{m:>27}" for m in MEASURES))
pooled = {}  # kind -> measure -> (mean, low, high) of the gaps averaged over the seeds
by_seed_gap = {}  # kind -> measure -> the mean gap of each seed
for kind, by_seed in runs.items():
    rows = {seed: {m: pair_gaps(r[m], pairs) for m in MEASURES} for seed, r in by_seed.items()}
    rows["all"] = {m: np.mean([rows[seed][m] for seed in by_seed], axis=0) for m in MEASURES}
    for seed, row in rows.items():
        intervals = {m: mean_and_interval(g) for m, g in row.items()}
        print(f"{kind:<8} {seed:>4} " + " ".join(f"{mean:>+9.3f} [{low:+.3f}, {high:+.3f}]"
                                                 for mean, low, high in intervals.values()))
    pooled[kind] = intervals  # the last row: all seeds
    by_seed_gap[kind] = {m: [rows[seed][m].mean() for seed in by_seed] for m in MEASURES}

# %%
for kind, by_seed in runs.items():
    levels = {}  # measure -> "function lo-hi against content lo-hi", min-max over the seeds
    for m in ("overlap", "bridged"):
        function = [r[m][pairs[:, 0]].mean() for r in by_seed.values()]
        content = [r[m][pairs[:, 1]].mean() for r in by_seed.values()]
        levels[m] = (f"function {min(function):.3f}-{max(function):.3f} against content "
                     f"{min(content):.3f}-{max(content):.3f}")
    print(f"{kind}, min-max over seeds: overlap {levels['overlap']} "
          f"(chance {NEIGHBOURS / (vocab_size - 1):.3f}); bridged cosine {levels['bridged']}")

# %%
# the measure on tables whose answer is known: a table shares every neighbour with itself, and
# with its own rows handed to other tokens about as many as chance
E_check = runs["TinyLM"][SEEDS[0]]["E"]
assert np.all(neighbour_overlap(E_check, E_check) == 1)
assert neighbour_overlap(E_check, E_check[shuffle]).mean() < 3 * NEIGHBOURS / (vocab_size - 1)
if lesson.verdict_tested("function words share more neighbours (short runs learn none: overlaps at chance)"):
    for kind in runs:
        gpt_bridged = pooled["TinyGPT"]["bridged"] if kind == "TinyGPT" else None
        hold(function_words_share_more(by_seed_gap[kind]["overlap"], pooled[kind], gpt_bridged), where=kind)

# %% [markdown]
# "No difference" needs more than an interval that contains zero: a noisy measurement, or one
# whose pairs had been shuffled, would pass that too. So for TinyLM's bridged cosine we state
# what size of gap would matter, `delta`: half of TinyGPT's gap. The verdict "TinyLM shows no
# gap in the essay's direction" then makes two claims that can fail: the interval's lower end
# is above `-delta` (a gap of `delta` in the essay's direction is excluded), and the
# measurement had the power to see TinyGPT's whole gap (at least 80% by the normal
# approximation, from the interval's width). Beside TinyLM's own gaps we run the same test on
# two controls: the gaps with TinyGPT's mean gap added (a TinyLM where the effect is real),
# and the cosines handed to random tokens before pairing.

# The test is `no_gap_shown(gaps, delta)` in minigrad/learn/kit/verdicts.py: (it holds, the
# interval's lower end, the power to see a gap of 2 delta) for the pair gaps averaged over the
# seeds; it holds when the lower end is above -delta and that power is over 80%.


# %%
delta = abs(pooled["TinyGPT"]["bridged"][0]) / 2
lm_gaps = np.mean([pair_gaps(r["bridged"], pairs) for r in runs["TinyLM"].values()], axis=0)
permuted = np.mean([pair_gaps(r["bridged"][np.random.default_rng(seed).permutation(vocab_size)], pairs)
                    for seed, r in runs["TinyLM"].items()], axis=0)
tests = {"TinyLM": lm_gaps, "TinyLM + TinyGPT's gap": lm_gaps - 2 * delta, "cosines permuted": permuted}
verdicts = {name: no_gap_shown(gaps, delta) for name, gaps in tests.items()}
for name, (holds, low, power) in verdicts.items():
    print(f"{name:<24} lower end {low:+.3f} (delta {delta:.3f}), power against TinyGPT's gap {power:.0%}: "
          f"{'no gap shown' if holds else 'not shown'}")
if lesson.verdict_tested("TinyLM rules out a gap in the essay's direction (short runs are too noisy)"):
    assert verdicts["TinyLM"][0], "TinyLM: no gap of delta in the essay's direction, with power to see one"
    assert not verdicts["TinyLM + TinyGPT's gap"][0], "the test fails where the gap is real"

# %%
bands = np.unique(np.geomspace(max(2, counts[is_content].min()), counts[1:].max() + 1, 9).astype(int))
fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
for ax, kind in zip(axes, runs):
    overlap = np.mean([r["overlap"] for r in runs[kind].values()], axis=0)  # averaged over the seeds
    groups = ((is_content, "0.6", "0.3", 8, "content words"),
              (is_function, "tab:red", "tab:red", 18, "function words"))
    for group, colour, line_colour, size, name in groups:
        jitter = rng.uniform(-0.006, 0.006, group.sum())  # overlaps are multiples of 0.1: spread the dots
        ax.scatter(counts[group], overlap[group] + jitter, s=size, color=colour, alpha=0.5, lw=0)
        band = np.digitize(counts, bands)
        middles, means = [], []
        for b in np.unique(band[group]):
            members = group & (band == b)
            if members.sum() >= 3:
                middles.append(np.exp(np.log(counts[members]).mean()))
                means.append(overlap[members].mean())
        ax.plot(middles, means, "o-", color=line_colour, label=f"{name}: band means")
    for word in ("the", "of", "and", "is", "object", "function"):
        if word in text_vocab.index:
            i = text_vocab.index[word]
            ax.annotate(word, (counts[i], overlap[i]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axhline(NEIGHBOURS / (vocab_size - 1), color="grey", ls=":", label="chance")
    ax.set_xscale("log")
    ax.set(xlabel="count in the text", title=f"{kind}: input vs output neighbourhoods ({len(SEEDS)} seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
axes[0].set_ylabel(f"share of the {NEIGHBOURS} nearest neighbours shared by E and W")
lesson.save(fig, "function_vs_content_words.png",
            "for every word, how many of its nearest neighbours the input table and the output map share, "
            "against its count: function words in red, content words in grey")

# %% [markdown]
# The measurement does not single out function words the way the essay does. Over the 86
# frequency-matched pairs (min-max over three seeds; "pooled": each pair's gap averaged over
# the seeds, with its 95% bootstrap interval):
#
# - **Neighbourhoods agree more for function words, not less.** A function word shares 8.4-9.5%
#   of its 10 nearest neighbours between the two tables in TinyLM and 7.2-8.0% in TinyGPT; the
#   content word of the same frequency shares 1.7-2.7% and 2.8-4.8% (chance: 0.5%). The gap is
#   positive in every seed; pooled it is +0.067 [+0.043, +0.093] (TinyLM) and +0.039 [+0.014,
#   +0.065] (TinyGPT). The figure shows where: function words seen 30 to 1,000 times; the rare
#   ones look like content words. Both tables sort words by the slot they fill: " the" sits
#   beside " a" and " an" in the input table and in the output map alike, and a class of words
#   that fill one slot is visible to both jobs.
# - **The bridged cosine depends on the model.** In TinyGPT a function word's output row follows
#   from its input row less well than a content word's: gap -0.076 to -0.100 per seed, pooled
#   -0.092 [-0.146, -0.041]. That is the essay's direction. In TinyLM the gap is +0.015 to
#   +0.047 per seed, pooled [-0.018, +0.081]: it excludes a gap in the essay's direction of
#   `delta` = 0.046 (half of TinyGPT's), and the 86 pairs had 95% power to see TinyGPT's whole
#   gap. So TinyLM shows no gap the essay's way; the interval does allow one of up to +0.08 the
#   other way. The test can fail: with TinyGPT's gap added to TinyLM's pairs, its lower end
#   falls to -0.110. With the cosines handed to random tokens it passes (lower end -0.036), as
#   it should: shuffling removes any gap. An interval that merely contains zero, the check this
#   replaced, passes for a shuffle and for a measurement too noisy to see anything alike.
# - **Lengths.** A function word's input row is 5-9% longer, relative to its table's median,
#   than the content word's of the same count (pooled +0.055 TinyLM, +0.082 TinyGPT, both
#   intervals above zero); its output row is not longer (TinyLM -3%, TinyGPT +1%).
#
# So the essay's "for function words they are conspicuously not" holds only in part. For every
# word the two rows differ a great deal: fewer than one neighbour in ten shared, a cosine of
# 0.1 to 0.3 through the best linear bridge. Function words do not stand out as more different:
# by neighbourhood they are the words whose two rows agree best, and only the transformer's
# bridged cosine leans the essay's way, by about a tenth. These are small models, trained on a
# text of 100,000 tokens for a few hundred thousand predictions; the essay has in mind models
# thousands of times larger, where this may differ.

# %% [markdown]
# ## The round trip on trained tied tables
#
# The material's caveat is about one table in both roles: read with `E`, score with the same
# `E`. Everything above used untied models, where the output map is a table of its own. Lesson
# 5 showed, on random tables, that a tied round trip can give the token back by geometry
# alone: token `t` scores `|e_t|^2` against itself and `e_t . e_j = |e_t| |e_j| cos` against
# another token, so it loses only to a row that is longer than its own *and* points its way.
# We train the same two models tied (three seeds each) and ask the same question of `E E^T`.
# Beside it, what the trained model actually does with the token it has just read: how often
# its prediction for the next token is that same token again.

# %% [markdown]
# ## Predict first
#
# In the trained tied TinyLM, for how many of the 2,000 tokens is `t` the top score of
# `E E^T`'s row `t`: about chance (one token), about as often as through the untied `W`, or
# most of them?

# %%
def echo_share(model, context: int, samples: int = 2000) -> float:
    """How often the model's top prediction for the next token is the token it has just read,
    on held-out windows (at every position for TinyGPT)."""
    every_position = predicts_every_position(model, context)
    _, held_out = split_windows(text_ids, context, valid_fraction=0.1, pieces=20,
                                every_position=every_position)
    windows = held_out.subset(np.linspace(0, len(held_out) - 1, min(samples, len(held_out))).astype(int))
    with mg.no_grad():
        predicted = model(windows.ids).data.argmax(axis=-1)
    just_read = windows.ids if every_position else windows.ids[:, -1]
    return float(np.mean(predicted == just_read))


def tied_round_trip(kind: str, seed: int) -> dict:
    """Train one tied model; per token: its rank on E E^T, its row's length, and the best other
    score against its self-score |e_t|^2; and how often the model echoes the token just read."""
    build, context, run = MODELS[kind]
    model = build(seed, tied=True)
    train_on_text(model, text_ids, context=context, steps=run["steps"], batch_size=run["batch"], seed=seed,
                  held_out_stride=S.tied_held_out_stride, label=f"{kind:<7} tied, seed {seed}", pieces=mine)
    E = tables_of(model)["E"]
    scores = E @ E.T
    own = np.diag(scores).copy()
    np.fill_diagonal(scores, -np.inf)
    winner = scores.argmax(axis=1)  # the best other token on each row
    lengths = np.linalg.norm(E, axis=1)
    return {"rank": rank_of_self(E, E), "lengths": lengths, "winner": winner,
            "margin": own - scores.max(axis=1), "echo": echo_share(model, context)}


# %%
tied_runs = {kind: {seed: tied_round_trip(kind, seed) for seed in SEEDS} for kind in MODELS}
print(f"{'model':<8} {'seed':>4} {'E E^T: top':>11} {'median rank':>12} {'untied W: top':>14} "
      f"{'top, longer half':>17} {'top, shorter half':>18} {'echoes the token read':>22}")
for kind, by_seed in tied_runs.items():
    for seed, r in by_seed.items():
        long_half = r["lengths"] > np.median(r["lengths"])
        r["top by half"] = [np.mean(r["rank"][half] == 0) for half in (long_half, ~long_half)]
        print(f"{kind:<8} {seed:>4} {np.mean(r['rank'] == 0):>11.1%} {np.median(r['rank']):>12.0f} "
              f"{np.mean(runs[kind][seed]['rank'] == 0):>14.2%} {r['top by half'][0]:>17.1%} "
              f"{r['top by half'][1]:>18.1%} {r['echo']:>22.1%}")
print(f"chance: 1/V = {1 / vocab_size:.2%}")

# %%
most_win = lesson.verdict_tested("most of tied TinyLM's tokens win their own row (short runs leave rows "
                                 "short)")
for kind, by_seed in tied_runs.items():  # |e_t . e_j| <= |e_t| |e_j|: only a longer row can beat |e_t|^2
    untied_top = [np.mean(runs[kind][seed]["rank"] == 0) for seed in SEEDS]
    hold(tied_round_trip_returns_the_token(list(by_seed.values()), untied_top, vocab_size,
                                           most_win=most_win and kind == "TinyLM"),
         where=kind)

# %% [markdown]
# On trained tied tables the round trip does give the token back: for 88-92% of TinyLM's
# tokens (median rank 0) and 22-39% of TinyGPT's (median rank 2-10), against 0.05% by chance
# and about that through the untied `W` of the first step. The reason is the self-score:
# `|e_t . e_j| <= |e_t| |e_j|`, so `t` can lose its own row only to a longer row pointing its
# way (the check above confirms it for every token that loses), and tokens in the longer
# half of the table win their row more often than those in the shorter half (TinyLM 91-96%
# against 85-88%, TinyGPT 25-47% against 20-31%). TinyGPT's tied rows share one direction far
# more than TinyLM's (lesson 12: its tied cone, about 0.42, is nearly its own output map's;
# TinyLM's, 0.16, is less than half of its own), which plausibly lets more of them outscore
# each other: fewer tokens win their own row.
#
# So the caveat needs care. What it does not say: that a tied table scores a token's own row
# low. It does not; geometry puts `t` at or near the top. What it does say, and what holds:
# the round trip is not what the model computes. The output map scores the state `h` that the
# layers build from the context, never the looked-up row itself, and the trained models
# predict the very token they have just read 4-5% of the time (TinyLM) and 9-10% (TinyGPT).
# The layers turn the looked-up row into a description of what comes next. An untied model
# shows that training needs no inverse; a tied one shows that an inverse-like diagonal can sit
# in the table without the model using it. (The small run's short training leaves TinyGPT's
# tied rows nearly random and the share far lower; it tests only that the tied round trip
# beats chance and the untied map.)

# %% [markdown]
# ## Check against finite differences
#
# The bridge `M` of the first step is a least-squares fit: at `M` the gradient of the mean
# squared error `|E M - W|^2 / V` must vanish. We take that gradient from minigrad's backward,
# after checking the backward itself against central differences on a small piece of the same
# tables (float64).

# %%
E_fit, W_fit = (table - table.mean(axis=0) for table in (lm0["E"], lm0["W"]))
bridge = mg.tensor(np.linalg.lstsq(E_fit, W_fit, rcond=None)[0], requires_grad=True, name="M")


def fit_error(M: mg.Tensor, E: np.ndarray = E_fit, W: np.ndarray = W_fit) -> mg.Tensor:
    """Mean squared error of the linear bridge: |E M - W|^2 / (number of rows)."""
    return ((mg.tensor(E) @ M - mg.tensor(W)) ** 2).sum() / len(E)


piece = mg.tensor(bridge.data[:6, :5].copy(), requires_grad=True, name="M, a 6 x 5 piece")
print(mg.gradcheck(lambda M: fit_error(M, E_fit[:40, :6], W_fit[:40, :5]), [piece]))
fit_error(bridge).backward()
print(f"largest entry of dL/dM at the least-squares bridge: {np.abs(bridge.grad).max():.1e}")
assert np.abs(bridge.grad).max() < 1e-6 * max(1.0, fit_error(bridge).item()), "the bridge is a minimum"

# %% [markdown]
# ## Exercise
#
# Run `minigrad exercise 9`: it copies the stub to `minigrad-exercises/09_trained_output_tables.py`,
# in the folder you run it from (in a notebook, define the function in a cell instead and run
# `minigrad.check(9, globals())`). There, write `rank_of_self(read, score)`: for every token
# `t`, how many tokens `j` score strictly higher than `t` itself when row `read[t]` is scored
# against the rows of `score`. Run `minigrad check 9`: it compares your ranks with ranks counted
# one pair at a time and names the mistake (ties counted against `t`, rows and columns swapped,
# the rank counted from the bottom, `t`'s own score computed another way than the others, the
# tables changed in place). Once your copy passes, this lesson counts every rank with yours: the
# round-trip table, the pseudo-inverse's column and the tied tables'.
