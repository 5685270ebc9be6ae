# %% [markdown]
# # Lesson 10: Tying over training
#
# The key idea: a tied row is one set of numbers serving two readers, and the classifier, which
# reaches every row at every step, does most of the moving, more for rare words and more in a
# transformer; what tying saves is large only while the table is a large share of the model.
#
# ## What you will see
#
# Lesson 6 split a tied row's gradient into the lookup's path and the classifier's over the
# first hundred SGD steps of TinyLM, when the model still predicts almost uniformly. Lesson 8
# showed how the course's models are trained (AdamW, held-out text) and introduced TinyGPT.
# Here the two meet:
#
# - The classifier's share of a tied row's gradient, as a curve over a whole AdamW run, for
#   frequent and for rare words, in TinyLM and in TinyGPT (three seeds each), run until the
#   curves flatten; both as gradient traffic and as the displacement AdamW makes of it.
# - One table for two readers: TinyLM's small table against the Transformer paper's
#   `sqrt(d_model)` scale on the lookup, at the first step and after training.
# - What tying saves in real models, counted parameter by parameter from their published
#   shapes: GPT-2, Llama, Gemma, the small untied Pythia models, and the large-vocabulary
#   multilingual BLOOM and mT5 models near a billion parameters.
#
# The essay's claims tested here: the compromise a tied row strikes "is settled overwhelmingly
# in favour of production", and tying mattered most when the table was a large share of the
# model, to the point that two untied maps "could easily be most of a one-billion-parameter
# model"; and, from the Transformer paper, that a shared embedding is multiplied by
# "sqrt(d_model)".
#
# Figures quoted in the text come from the full-size run, `minigrad lesson 10 --no-pause`
# (three seeds, min-max). The small run (`--small`) prints its own, smaller figures and says
# which verdicts it does not test.

# %% [markdown]
# ## Predict first
#
# GPT-2 small has about 124 million parameters and a table of 50,257 x 768. What share of the
# model is that table, and what share would tying save in Llama-2-7B?

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn import data
from minigrad.learn.course import model_pieces, yours
from minigrad.learn.kit import classifier_and_lookup as minigrads_split
from minigrad.learn.kit import (
    hold,
    paper_scale,
    setup,
    t_interval,
    tied_compromise,
    tied_share_curve,
    train_on_text,
    two_untied_maps,
    welch_interval,
)
from minigrad.learn.train import split_windows
from minigrad.models import TinyGPT, TinyLM
from minigrad.nn import functional as F

lesson = setup(10, minutes=(2.4, 0.3))  # caps BLAS threads, draws headless, makes OUT
words = data.tokenize(data.load_text())
mine = model_pieces(10)  # the models train on your pieces of lessons 4-8 that pass their checks
own = yours(10)  # your classifier_and_lookup from minigrad-exercises/, if it passes `minigrad check 10`
split = own.get("classifier_and_lookup", minigrads_split)

# %% [markdown]
# ## The compromise over a whole run
#
# The first hundred steps are the start of training, when the model predicts almost uniformly
# and every row's `p_i` is about `1/V`. Does the classifier keep its large share once the
# model has learned something? We train lesson 8's tied model (V = 2,000, width 64, 3 words of
# context, AdamW at 3e-3) and, every `CURVE_EVERY` steps, record the ledger for `CURVE_WINDOW`
# consecutive training steps and compute the classifier's share of the traffic, for the 100
# most frequent words and for the rarest (rank 1,000 and beyond). Three seeds, each with its
# own initialisation and batch order; the band in the figure is the range over seeds.
#
# The instrument is the ledger of lesson 6: at each recorded step it keeps every gradient that
# reached the tied table, under the path it came along, and from it we take the table's
# gradient apart into what the classifier sent and what the lookup sent. That split is this
# lesson's exercise, `classifier_and_lookup(led, table)` (at the end); once yours passes
# `minigrad check 10`, every share below is computed from your split, else from minigrad's.
# Both models train on your pieces of lessons 4 to 8 where they pass (the first lines of the
# run say whose).
#
# The material's claim is about transformers, so beside TinyLM we do the same for a tied
# `TinyGPT` on the same vocabulary (width 64, 4 heads, 2 blocks, 32 tokens of context,
# predicting at every position, 8 windows a step). Its table is read by the lookup at the
# bottom (`transformer.wte`) and scores at the top (`lm_head`); the ledger names the two paths
# the same way. A prediction first: in the transformer, the lookup's gradient comes back
# through two blocks and a LayerNorm before the output map. Will the classifier's share of a
# tied row's gradient end up larger than in TinyLM, about the same, or smaller?

# %%
S = lesson.sizes(  # ledger windows: `window` recorded steps out of every `every`
    full=dict(lm_steps=2000, lm_every=100, lm_window=10, gpt_steps=3000, gpt_every=150, gpt_window=6,
              gpt_context=32, gpt_seeds=5, scale_steps=600, scale_seeds=3),
    small=dict(lm_steps=250, lm_every=50, lm_window=5, gpt_steps=60, gpt_every=20, gpt_window=3,
               gpt_context=16, gpt_seeds=3, scale_steps=60, scale_seeds=1),
)
LM_STEPS = int(os.environ.get("MINIGRAD_CURVE_STEPS", S.lm_steps))  # TinyLM: two thirds of lesson 8's run
# TinyGPT's two shares of one run are compared seed by seed (a paired interval): five seeds
CURVE_SEEDS = {"TinyLM": (0, 1, 2), "TinyGPT": tuple(range(S.gpt_seeds))}
lm_vocab = data.Vocabulary.build(words, max_size=2000)
lm_windows, _ = split_windows(lm_vocab.encode(words), 3, valid_fraction=0.1, pieces=20)
gpt_windows, _ = split_windows(lm_vocab.encode(words), S.gpt_context, valid_fraction=0.1, pieces=20,
                               every_position=True)
share_bands = {"100 most frequent": np.arange(1, 101),
               "rank 1,000 and beyond": np.arange(1000, len(lm_vocab))}
CURVE_MODELS = {  # name -> (build(seed): tied by your tie_weights once it passes, training windows,
    "TinyLM": (lambda seed: mine.build(TinyLM(len(lm_vocab), 64, 128, context=3, tied=False, rng=seed), True),
               lm_windows,
               dict(batch_size=128, steps=LM_STEPS, every=S.lm_every * LM_STEPS // S.lm_steps,
                    window=S.lm_window)),
    "TinyGPT": (lambda seed: mine.build(TinyGPT(len(lm_vocab), S.gpt_context, 64, 4, 2, tied=False, rng=seed),
                                        True),
                gpt_windows, dict(batch_size=8, steps=S.gpt_steps, every=S.gpt_every, window=S.gpt_window)),
}  # ... and the run: batch, steps, every, window)

# %%
curve_starts, curve, moved = {}, {}, {}  # model -> window starts; (model, band) -> per seed and window
for name, (build, windows, run) in CURVE_MODELS.items():
    by_seed = {seed: tied_share_curve(build(seed), windows, bands=share_bands, seed=seed, pieces=mine,
                                      split=split, **run) for seed in CURVE_SEEDS[name]}
    curve_starts[name] = by_seed[0][0]
    for band in share_bands:
        curve[name, band] = np.array([found[1][band] for found in by_seed.values()])  # traffic shares
        moved[name, band] = np.array([found[2][band] for found in by_seed.values()])  # (seeds, windows, 2)
moved_share = {key: m[..., 0] / m.sum(axis=-1) for key, m in moved.items()}  # the classifier's share
whole_run = {key: m[..., 0].sum(axis=1) / m.sum(axis=(1, 2)) for key, m in moved.items()}  # (seeds,)
thirds = {name: np.array_split(np.arange(len(starts)), 3) for name, starts in curve_starts.items()}
late_mean = {key: c[:, thirds[key[0]][2]].mean(axis=1) for key, c in curve.items()}  # (seeds,)
late_moved = {key: c[:, thirds[key[0]][2]].mean(axis=1) for key, c in moved_share.items()}
drift = {key: late_mean[key] - c[:, thirds[key[0]][1]].mean(axis=1) for key, c in curve.items()}
print(f"classifier share of a tied row's gradient, {len(CURVE_SEEDS['TinyLM'])} seeds of TinyLM and "
      f"{len(CURVE_SEEDS['TinyGPT'])} of TinyGPT (min-max); traffic = summed "
      f"gradient norms, moved = what AdamW makes of them")
print(f"{'':>32} {'first, traffic':>15} {'last third: traffic':>20} {'moved':>12} {'traffic drift':>14} "
      f"{'moved, whole run':>17}")
span = lambda x, f=".0%": f"{x.min():{f}}-{x.max():{f}}"  # noqa: E731
for (name, band), c in curve.items():
    key = name, band
    print(f"{name + ', ' + band:>32} {span(c[:, 0]):>15} {span(late_mean[key]):>20} "
          f"{span(late_moved[key]):>12} "
          f"{span(100 * drift[key], '+.1f') + ' pt':>14} {span(whole_run[key]):>17}")

# %% [markdown]
# ### How sure: two intervals over the seeds
#
# Lesson 8 put a t-interval on a mean over seeds. Two comparisons here need two variants of it.
# TinyGPT against TinyLM: the seeds of one model have nothing to do with the other's, so the
# difference of the two means gets Welch's interval: its standard error adds the two means'
# squared standard errors, `sqrt(s1^2 / n1 + s2^2 / n2)`, and its t has fewer degrees of freedom
# when the spreads differ (`welch_interval` in the kit). What AdamW moves against the traffic,
# in TinyGPT: both shares come from the same run, so they are pairs. Take the difference seed by
# seed and put a t-interval on the mean difference; what the two shares of one run have in
# common (a run whose shares are both high) cancels, so the interval is narrower than one on
# either share. TinyGPT runs five seeds for that interval; TinyLM three.

# %%
FREQUENT, RARE = share_bands
lm_late = {band: late_mean["TinyLM", band] for band in share_bands}
gpt_late = {band: late_mean["TinyGPT", band] for band in share_bands}
for band in share_bands:  # TinyGPT's late share minus TinyLM's: 95% interval (Welch) over the seeds
    low, high = welch_interval(gpt_late[band], lm_late[band])
    print(f"TinyGPT's late share above TinyLM's, {band}: {100 * low:+.1f} to {100 * high:+.1f} points")
    low, high = t_interval(late_moved["TinyGPT", band] - gpt_late[band])
    print(f"  TinyGPT's moved share minus its traffic share, paired by seed: {100 * low:+.1f} to "
          f"{100 * high:+.1f} points")
# the checks are one named function in minigrad/learn/kit/verdicts.py, returning its statements
windows_run = {name: len(starts) for name, starts in curve_starts.items()}
hold(tied_compromise(curve, moved, windows_run, FREQUENT, RARE,
                     full_size=lesson.verdict_tested(
                         f"the curves flatten, nor how TinyGPT's late share compares with TinyLM's: this "
                         f"short run stops early, TinyGPT's late share at {span(gpt_late[FREQUENT])}")))

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
for x, (name, colour) in enumerate((("TinyLM", "C0"), ("TinyGPT", "C3"))):
    left.plot(np.full(len(late_mean[name, FREQUENT]), x), 100 * late_mean[name, FREQUENT], "o", color=colour)
low, high = welch_interval(gpt_late[FREQUENT], lm_late[FREQUENT])
left.errorbar(2, 100 * (gpt_late[FREQUENT].mean() - lm_late[FREQUENT].mean()), fmt="ks", capsize=6,
              yerr=[[100 * (gpt_late[FREQUENT].mean() - lm_late[FREQUENT].mean() - low)],
                    [100 * (high - gpt_late[FREQUENT].mean() + lm_late[FREQUENT].mean())]])
left.set_xticks([0, 1, 2], ["TinyLM\n(seeds)", "TinyGPT\n(seeds)", "difference\n(Welch, 95%)"])
left.set(ylabel="classifier's late share, 100 most frequent (%)", title="Two models: unpaired seeds")
pairs = 100 * (late_moved["TinyGPT", RARE] - gpt_late[RARE])  # one difference per seed
low, high = t_interval(pairs / 100)
right.plot(np.zeros(len(pairs)), pairs, "o", color="C3", label="one seed: moved minus traffic")
right.errorbar(1, pairs.mean(), yerr=[[pairs.mean() - 100 * low], [100 * high - pairs.mean()]], fmt="ks",
               capsize=6, label="mean, paired t (95%)")
right.axhspan(-5, 5, color="grey", alpha=0.15, label="within 5 points")
right.set_xticks([0, 1], ["seeds", "interval"])
right.set(ylabel="points", title="One run, two shares: paired (TinyGPT, rank 1,000+)", xlim=(-0.5, 1.5))
right.legend(fontsize=7)
lesson.save(fig, "intervals_over_seeds.png",
            "left: each model's seeds and Welch's interval of the difference; right: TinyGPT's paired "
            "differences and their t-interval")

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.3), sharey=True)
for ax, (name, (_, windows, run)) in zip(axes, CURVE_MODELS.items()):
    for band, colour in zip(share_bands, ["C0", "C3"]):
        c = curve[name, band]
        seen_tokens = np.array(curve_starts[name]) * windows.positions * run["batch_size"]
        ax.plot(seen_tokens / 1000, np.median(c, axis=0), "o-", ms=3, color=colour,
                label=f"{band} (median of seeds)")
        ax.fill_between(seen_tokens / 1000, c.min(axis=0), c.max(axis=0), color=colour, alpha=0.25)
        ax.plot(seen_tokens / 1000, np.median(moved_share[name, band], axis=0), "--", color=colour, lw=1,
                label=f"{band}: share of what AdamW moves")
    ax.axhline(0.5, color="k", ls=":", lw=1)
    ax.set(xlabel=f"thousands of tokens predicted in training (AdamW, tied {name})", ylim=(0, 1.02),
           title=f"{name}: the tied compromise over training ({len(CURVE_SEEDS[name])} seeds, range shaded)")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8)
axes[0].set_ylabel("classifier / (classifier + lookup)")
lesson.save(fig, "tied_share_over_training.png",
            "the classifier's share of a tied row's gradient over training, frequent against rare "
            "words, in TinyLM (left) and TinyGPT (right), the range over seeds shaded; dashed: the "
            "classifier's share of the displacement AdamW makes")

# %% [markdown]
# At full size TinyLM runs 2,000 steps (two thirds of lesson 8's run), TinyGPT 3,000 (about
# 770,000 predicted tokens, three times TinyLM's 256,000: it learns more slowly per token, and
# its curves need longer to level off); min-max over three seeds of TinyLM and five of TinyGPT.
#
# The first window reproduces the early picture in both models: most of a frequent row's
# gradient and nearly all of a rare row's come from the classifier (TinyLM 68-69% and 93-94%,
# TinyGPT 86-87% and 97-98%). It does not last. Once the model stops predicting uniformly the
# wrong words' probabilities fall, and the classifier's pushes shrink with them. Over the last
# third of the run:
#
# - TinyLM: 52-53% of a frequent row's traffic comes from the classifier, 58-61% of a rare
#   row's; the last third differs from the middle third by -1.6 to +4.9 points.
# - TinyGPT: 57-58% and 70-75%, the last third 0.2 to 4 points below the middle third: the
#   curves have nearly levelled off, still drifting down slowly.
#
# So the transformer's tied row leans further toward the classifier than TinyLM's, in every seed
# and both bands, by 4.2 to 6.1 points for the frequent words (Welch's interval) and 9.0 to 14.9
# for the rare ones. We have not isolated why: the two models differ in depth, normalisation,
# initial scale and context.

# %% [markdown]
# Traffic adds up gradient norms; what moves the table is what AdamW makes of them, each gradient
# divided by the running size of the row's gradients (the dashed curves). Over the last third
# the classifier makes 52% and 53-56% of TinyLM's displacement and 56-57% and 67-70% of
# TinyGPT's; in TinyGPT that is 0.4 to 2.1 points (frequent) and 2.1 to 3.8 points (rare) below
# its traffic share (paired intervals), within 5. Added up over the whole run, early windows
# included, it makes 53-54% and 65-67% of TinyLM's displacement and 52-59% and 76-78% of
# TinyGPT's: more than half in both bands of both models.
#
# The classifier never settles the compromise "overwhelmingly" after the first steps, but it is
# the larger of the two pushes all run long, and by the end it has made most of the table's
# movement, more so for rare words and more so in the transformer (lesson 12 finds the result in
# the tied table's geometry). The material's next sentence, that the row ends up "mostly an
# answer to" the question of which words come before this one, describes the outcome better than
# "overwhelmingly" describes the process: a majority, not a landslide.

# %% [markdown]
# ## One table, two scales: the Transformer paper's sqrt(d)
#
# A tied table has to suit two readers. The lookup hands its rows to the network as inputs,
# where a row of entries about 1 in size is what the layers above expect; the output map
# scores every token with `h . e_i`, where rows that large make the first logits large and
# the first predictions confident and wrong. TinyLM settles this by drawing its table small,
# with standard deviation `1/sqrt(d)` (its constructor's comment: "a N(0, 1) table would make
# the first logits huge once it is also the head"), and lets the inputs be small too. The
# Transformer paper, which shares one matrix between its embeddings and the output map, says
# it multiplies the embeddings by "sqrt(d_model)": with a table of that same `1/sqrt(d)` size
# (the initialisation of its code base), the lookup then hands on rows of size about 1 while
# the output map keeps its small rows.
#
# We measure the three ways with the tied TinyLM of this lesson (d = 64): TinyLM as built
# (table `1/sqrt(d)`, no scale); the paper's (the same table, the lookup multiplied by
# `sqrt(d) = 8`); and a table of unit size with no scale (the default of `torch.nn.Embedding`),
# which gives the network the paper's inputs and the output map rows eight times longer. First
# the untrained models on held-out text, then training with lesson 8's AdamW.

# %%
class ScaledLookupLM(TinyLM):
    """Tied TinyLM (d = 64): its table drawn with std `table_std`, its lookup multiplied by `scale`."""

    def __init__(self, vocab_size: int, *, table_std: float, scale: float, rng: int):
        super().__init__(vocab_size, 64, 128, context=3, tied=False, rng=rng)  # tied by mine.build
        self.emb.weight.data *= np.float32(table_std * np.sqrt(64))  # TinyLM draws std 1/sqrt(d)
        self.scale = scale

    def forward(self, ids: np.ndarray) -> mg.Tensor:
        x = self.emb(ids).reshape(len(ids), -1) * self.scale
        return self.head(self.down(self.up(x).tanh()))


SCALINGS = {"TinyLM as built": (1 / 8, 1.0), "the paper's sqrt(d)": (1 / 8, 8.0), "unit table": (1.0, 1.0)}
_, lm_held_out = split_windows(lm_vocab.encode(words), 3, valid_fraction=0.1, pieces=20)
log_v = np.log(len(lm_vocab))
first = {}  # name -> (std of the lookup's output, std of the first logits, first held-out loss) per seed
for name, (table_std, scale) in SCALINGS.items():
    for seed in range(S.scale_seeds):
        model = mine.build(ScaledLookupLM(len(lm_vocab), table_std=table_std, scale=scale, rng=seed), True)
        with mg.no_grad():
            inputs = model.emb(lm_held_out.ids).data * scale
            logits = model(lm_held_out.ids)
            loss = F.cross_entropy(logits, lm_held_out.targets).item()
        first.setdefault(name, []).append((inputs.std(), logits.data.std(), loss))
first = {name: np.array(rows) for name, rows in first.items()}
print(f"untrained, on held-out text (log V = {log_v:.3f}); min-max over {S.scale_seeds} seed(s):")
for name, r in first.items():
    print(f"{name:>20}: inputs std {span(r[:, 0], '.3f'):>11}, first logits std {span(r[:, 1], '.3f'):>11}, "
          f"loss {span(r[:, 2], '.3f')}")

# %%
scaled_end = {name: [] for name in SCALINGS}  # name -> the last held-out loss of each seed
for name, (table_std, scale) in SCALINGS.items():
    for seed in range(S.scale_seeds):
        model = mine.build(ScaledLookupLM(len(lm_vocab), table_std=table_std, scale=scale, rng=seed), True)
        history = train_on_text(model, lm_vocab.encode(words), context=3, steps=S.scale_steps, batch_size=128,
                                seed=seed, held_out_stride=2, label=f"{name}, seed {seed}", pieces=mine)
        scaled_end[name].append(history.valid_loss[-1])
scaled_end = {name: np.array(v) for name, v in scaled_end.items()}
print(f"held-out loss after {S.scale_steps} steps, min-max over {S.scale_seeds} seed(s):")
for name, v in scaled_end.items():
    print(f"{name:>20}: {span(v, '.3f')}   (against TinyLM as built, per seed: "
          f"{span(v - scaled_end['TinyLM as built'], '+.3f')})")

# %%
built, paper, unit = (first[name] for name in SCALINGS)
assert np.all(abs(built[:, 0] - 1 / 8) < 0.01) and np.all(abs(paper[:, 0] - 1) < 0.05), "inputs: 1/8 and 1"
assert np.all(abs(unit[:, 0] - 1) < 0.05), "the unit table hands on the paper's inputs"
assert np.all(abs(built[:, 2] - log_v) < 0.1) and np.all(abs(paper[:, 2] - log_v) < 0.1), "start near log V"
assert unit[:, 1].min() > 5 * paper[:, 1].max(), "the unit table's first logits are several times larger"
assert unit[:, 2].min() > log_v + 1, "and it starts more than a nat above a uniform guess"
if lesson.verdict_tested("the paper's scale trains to a lower held-out loss than TinyLM as built"):
    hold(paper_scale(scaled_end))  # minigrad/learn/kit/verdicts.py

# %% [markdown]
# At full size (`minigrad lesson 10 --no-pause`, three seeds): untrained, TinyLM as built
# hands its layers inputs of standard deviation 0.12 and starts at a uniform guess (first
# logits of standard deviation 0.07, loss 7.59-7.62 against log V = 7.60). With the paper's
# scale the inputs are of size 1 and the start is still uniform (logits 0.27, loss
# 7.62-7.68). The unit table hands on the same inputs as the paper's, but its output rows
# are eight times longer: first logits of standard deviation 2.2 and a start 2.2-2.7 nats
# above a uniform guess.
#
# After 600 AdamW steps the paper's scale is ahead of TinyLM as built in every seed, by
# 0.15-0.17 nats (held-out 4.05-4.07 against 4.20-4.23), and the unit table is 0.55-0.60
# behind. So the square root does the job the shared matrix needs: rows small enough to score
# with, read at a size the layers above can use. TinyLM's small table solves only the output
# half of the problem; it pays for it with small inputs, about 0.15 nats on this budget.
# (Whether the gap closes with longer training is not measured here.)

# %% [markdown]
# ## What tying saves in real models
#
# A tied model stores one `V x d` table instead of two. How much that is depends on the rest of
# the model. We count every parameter from the published configurations rather than trusting
# rounded totals. The shapes below are the `config.json` of each model as released on the
# Hugging Face Hub (`gpt2`, `meta-llama/Llama-2-7b-hf`, `meta-llama/Llama-3.2-1B`,
# `google/gemma-2b`, `EleutherAI/pythia-70m`/`-160m`/`-410m`, `bigscience/bloom-560m`,
# `bigscience/bloom-1b1`, `google/mt5-base`), which match the papers; they are the `MODELS`
# dictionary of the next cell, and the count must come out at each model's published size:
#
# | model | V | d | layers | attention (heads, key/value heads, head size) | MLP width | tied as released |
# |---|---|---|---|---|---|---|
# | GPT-2 small | 50,257 | 768 | 12 | 12 heads of 64, plus 1,024 learned positions | 3,072 | yes |
# | Llama-2-7B | 32,000 | 4,096 | 32 | 32, 32, 128 | 11,008 (gated) | no |
# | Llama-3.2-1B | 128,256 | 2,048 | 16 | 32, 8, 64 | 8,192 (gated) | yes |
# | Gemma-2B | 256,000 | 2,048 | 18 | 8, 1, 256 | 16,384 (gated) | yes |
# | Pythia-70M | 50,304 | 512 | 6 | 8 heads of 64, rotary positions | 2,048 | no |
# | Pythia-160M | 50,304 | 768 | 12 | 12 heads of 64, rotary positions | 3,072 | no |
# | Pythia-410M | 50,304 | 1,024 | 24 | 16 heads of 64, rotary positions | 4,096 | no |
# | BLOOM-560m | 250,880 | 1,024 | 24 | 16 heads of 64, ALiBi (no position table) | 4,096 | yes |
# | BLOOM-1b1 | 250,880 | 1,536 | 24 | 16 heads of 96, ALiBi | 6,144 | yes |
# | mT5-base | 250,112 | 768 | 12 + 12 | 12 heads of 64, relative positions | 2,048 (gated) | no |

# %% [markdown]
# Published sizes: GPT-2 small 124M (its paper's table says 117M; the released weights hold
# 124,439,808), Llama-2-7B 6.74B, Llama-3.2-1B 1.24B (Meta's card rounds to 1.23B), Gemma-2B
# 2.51B (its report lists 1,981,884,416 non-embedding parameters, and counts its table as
# 256,128 rows: a padded vocabulary). The Pythia suite (GPT-NeoX blocks: GPT-2's layout with
# biases and LayerNorms, no learned positions) publishes exact totals: 70,426,624,
# 162,322,944 and 405,334,016; so do the BLOOM model cards, 559,214,592 and 1,065,314,304
# (GPT-2's block again, with ALiBi instead of a position table and one extra LayerNorm after
# the lookup). mT5-base's checkpoint holds 582,401,280 (its paper rounds to 580M): an encoder
# and a decoder that share one input table, and a separate output map.

# %%
MODELS = {  # the published configurations (config.json on the Hugging Face Hub, named above)
    "GPT-2 small": dict(V=50_257, d=768, layers=12, mlp=3072, positions=1024, tied=True, published=124e6),
    "Llama-2-7B": dict(V=32_000, d=4096, layers=32, heads=32, kv_heads=32, head=128, mlp=11_008,
                       tied=False, published=6.74e9),
    "Llama-3.2-1B": dict(V=128_256, d=2048, layers=16, heads=32, kv_heads=8, head=64, mlp=8192,
                         tied=True, published=1.24e9),
    "Gemma-2B": dict(V=256_000, d=2048, layers=18, heads=8, kv_heads=1, head=256, mlp=16_384,
                     tied=True, published=2.51e9),
    # GPT-NeoX blocks count like GPT-2's, with no learned position table (rotary)
    "Pythia-70M": dict(V=50_304, d=512, layers=6, mlp=2048, positions=0, tied=False, published=70_426_624),
    "Pythia-160M": dict(V=50_304, d=768, layers=12, mlp=3072, positions=0, tied=False, published=162_322_944),
    "Pythia-410M": dict(V=50_304, d=1024, layers=24, mlp=4096, positions=0, tied=False,
                        published=405_334_016),
    # BLOOM: GPT-2 blocks, ALiBi (no position table), a LayerNorm right after the lookup
    "BLOOM-560m": dict(V=250_880, d=1024, layers=24, mlp=4096, positions=0, lookup_norm=True, tied=True,
                       published=559_214_592),
    "BLOOM-1b1": dict(V=250_880, d=1536, layers=24, mlp=6144, positions=0, lookup_norm=True, tied=True,
                      published=1_065_314_304),
    # mT5 (T5 v1.1): encoder and decoder of `layers` blocks each, one input table shared by both
    "mT5-base": dict(V=250_112, d=768, layers=12, heads=12, head=64, mlp=2048, encoder_decoder=True,
                     tied=False, published=582_401_280),
}
EXACT = ("Pythia-70M", "Pythia-160M", "Pythia-410M", "BLOOM-560m", "BLOOM-1b1", "mT5-base")


def body_parameters(c: dict) -> int:
    """Every parameter except the token table(s)."""
    d = c["d"]
    if c.get("encoder_decoder"):  # T5 v1.1: no biases, one norm scale, gated MLP, 32 position buckets a head
        attention, mlp, buckets = 4 * d * c["heads"] * c["head"], 3 * d * c["mlp"], 32 * c["heads"]
        encoder = c["layers"] * (attention + mlp + 2 * d) + buckets + d
        decoder = c["layers"] * (2 * attention + mlp + 3 * d) + buckets + d  # self- and cross-attention
        return encoder + decoder
    if "positions" in c:  # GPT-2 and GPT-NeoX: biases and LayerNorms (scale and shift), learned positions
        block = (d * 3 * d + 3 * d) + (d * d + d) + (d * c["mlp"] + c["mlp"]) + (c["mlp"] * d + d) + 2 * 2 * d
        return c["layers"] * block + c["positions"] * d + 2 * d + (2 * d if c.get("lookup_norm") else 0)
    # Llama and Gemma: no biases, RMSNorm (one scale), grouped key/value heads, gated MLP (3 matrices)
    attention = d * c["heads"] * c["head"] * 2 + d * c["kv_heads"] * c["head"] * 2
    block = attention + 3 * d * c["mlp"] + 2 * d
    return c["layers"] * block + d


# %%
print(f"{'model':>13} {'V x d':>13} {'total as released':>18} {'published':>10} {'one table':>10} "
      f"{'both maps, untied':>18} {'tying saves':>12}")
savings = {}
for name, c in MODELS.items():
    one_table = c["V"] * c["d"]
    body = body_parameters(c)
    released = body + one_table * (1 if c["tied"] else 2)
    untied_total = body + 2 * one_table
    assert abs(released / c["published"] - 1) < 0.005, f"{name}: {released:,} is not the published size"
    assert name not in EXACT or released == c["published"], f"{name}: published exactly, counted {released:,}"
    savings[name] = (one_table / released, one_table / untied_total, 2 * one_table / untied_total)
    print(f"{name:>13} {one_table:>13,} {released:>18,} {c['published']:>10.3g} {savings[name][0]:>10.1%} "
          f"{savings[name][2]:>18.1%} {savings[name][1]:>12.1%}   ({'tied' if c['tied'] else 'untied'})")

# %%
essay_table = 120_000 * 4_000
print(f"the essay's example table, 120,000 x 4,000 = {essay_table:,} numbers")
assert 0.45e9 < essay_table < 0.5e9, "'close to half a billion'"
assert savings["Llama-2-7B"][1] < 0.03 < 0.15 < min(savings[m][1] for m in ("Llama-3.2-1B", "Gemma-2B"))
hold(two_untied_maps(savings))  # which kinds of model the claim fits (minigrad/learn/kit/verdicts.py)
assert 0.5e9 < MODELS["mT5-base"]["published"] and not MODELS["mT5-base"]["tied"], "released untied, near 1B"

# %%
fig, ax = plt.subplots(figsize=(8, 8))
names = list(MODELS)
y = np.arange(len(names))
bars = [(0, 0.27, "one table, share of the model as released"),
        (1, 0.0, "tying saves, share of the untied model"),
        (2, -0.27, "two untied maps, share of the untied model")]
for k, offset, label in bars:
    values = [100 * savings[n][k] for n in names]
    ax.barh(y - offset, values, height=0.27, label=label)
    for i, value in enumerate(values):
        ax.text(value + 0.5, i - offset, f"{value:.1f}%", va="center", fontsize=7)
ax.axvline(50, color="k", ls=":", lw=1)
ax.set_yticks(y, [f"{n}\n({'tied' if MODELS[n]['tied'] else 'untied'})" for n in names])
ax.set(xlabel="% of parameters", title="What one V x d table weighs in real models", xlim=(0, 85))
ax.invert_yaxis()  # in the order of the table above
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=2)  # below: no bar hidden
fig.tight_layout()
lesson.save(fig, "tying_savings.png",
            "the share of parameters one V x d table takes in real models, and what tying saves")

# %% [markdown]
# The pattern the essay describes is there for the four larger models. In GPT-2 small one
# table is almost a third of the model (31%), so tying saved nearly a quarter of what an
# untied GPT-2 small would have been.
# Llama-2-7B is untied, and tying would save under 2%. The two recent small models with large
# vocabularies are tied, and there one table is about a fifth of the model.
#
# Whether two untied maps "could easily be most of a one-billion-parameter model" depends on
# the kind of model. In those four they would not be: 47% of GPT-2 small, 35% of Llama-3.2-1B
# and of Gemma-2B, 4% of Llama-2-7B (the third bar). Gemma has a quarter-million vocabulary,
# but a body of two billion parameters beside it.
#
# The multilingual models near a billion bear the sentence out. Their vocabularies are about
# 250,000 tokens, five times GPT-2's, and their widths stay between 768 and 1,536: mT5-base is
# released untied, and its two maps are 66% of its 582 million parameters; BLOOM-560m and
# BLOOM-1b1 are released tied, and untied their two maps would be 63% of 0.82 billion and 53%
# of 1.45 billion. (The essay's example table, 120,000 x 4,000, does hold 480 million numbers,
# but none of these models pairs a width of 4,000 with a body small enough for that.)
#
# The small untied English models fit too, at a smaller size than the sentence names: the
# Pythia models keep two maps of a 50,304-token vocabulary, 73% of Pythia-70M, 48% of
# Pythia-160M and 25% of Pythia-410M. So the claim fits models whose vocabulary is large next
# to their width and depth: multilingual models of half a billion to a billion and a half
# parameters, and English models of tens of millions; it does not fit English-vocabulary
# models at a billion.

# %% [markdown]
# ## Check against finite differences
#
# The curves above rest on the tied gradient of TinyGPT: the lookup's rows and the
# classifier's dense rows summed into one table. We write a small tied TinyGPT's loss as a
# function of its table alone (float64, the blocks held fixed), give the same tensor both
# roles, and compare its backward with central differences; the model's own backward must then
# give the same gradient, and the ledger's two paths must add up to it.

# %%
def gpt_loss_with_table(model: TinyGPT, table: mg.Tensor, ids: np.ndarray, targets: np.ndarray) -> mg.Tensor:
    """TinyGPT's loss with its token table passed in, read at the bottom and scoring at the top."""
    t = model.transformer
    x = F.embedding(ids, table) + t.wpe(np.arange(ids.shape[1]))
    for block in t.h:
        x = block(x)
    logits = F.linear(t.ln_f(x), table)  # (B, T, V): B*T rows of V classes for the loss
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# %%
small_gpt = TinyGPT(7, context=4, d_model=4, n_heads=2, n_layers=1, tied=True, dtype=np.float64, rng=3)
check_ids, check_targets = np.array([[1, 5, 1, 0], [6, 2, 2, 3]]), np.array([[5, 1, 0, 6], [2, 2, 3, 4]])
gpt_table = mg.tensor(small_gpt.transformer.wte.weight.data.copy(), requires_grad=True, name="wte = lm_head")
print(mg.gradcheck(lambda E: gpt_loss_with_table(small_gpt, E, check_ids, check_targets), [gpt_table]))

gpt_loss_with_table(small_gpt, gpt_table, check_ids, check_targets).backward()
with mg.ledger(names=small_gpt) as check_ledger:
    small_gpt.loss(check_ids, check_targets).backward()
tied_table = small_gpt.transformer.wte.weight
classifier_part, lookup_part = split(check_ledger, tied_table)  # yours, once it passes
assert np.allclose(tied_table.grad, gpt_table.grad), "the model's tied gradient is the checked one"
assert np.allclose(classifier_part + lookup_part, gpt_table.grad), "and the two paths add up to it"
print("TinyGPT's tied gradient equals the checked gradient, and classifier + lookup paths add up to it")

# %% [markdown]
# ## Exercise
#
# Run `minigrad exercise 10`: it copies the stub to `minigrad-exercises/10_tying_over_training.py`,
# in the folder you run it from (in a notebook, define the function in a cell instead and run
# `minigrad.check(10, globals())`). There, write `classifier_and_lookup(led, table)`: from the
# ledger of one backward, the tied table's gradient split into two dense `(V, d)` arrays, what
# every classifier path sent and what every lookup path sent. Run `minigrad check 10`: it
# compares your parts with each path's gradient and with the table's own `.grad`, which they
# must add up to, and names the slips (the roles swapped, a second path left out, a repeated row
# written over instead of added, everything given to one side, the ledger's arrays changed).
# Once your copy passes, the share curves above and the finite-difference check's split are
# computed from yours.
