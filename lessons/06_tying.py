# %% [markdown]
# # Lesson 6: Tying the two maps
#
# One table, read and said: where its gradient comes from, why absent rows move, what tying saves.
#
# ## What you will see
#
# Lessons 3 to 5 met two tables of the same shape `(V, d)`: the embedding `E`, read by a lookup
# at the bottom of the model, and the output map `W`, which scores every token at the top.
# Weight tying makes them one parameter: `head.weight = emb.weight`. Then:
#
# - The backward graph has one parameter node with two incoming edges: a sparse one from the
#   lookup and a dense one from the classifier. We draw it.
# - The gradient ledger (lesson material in `docs/ledger.md`) splits every row's gradient into
#   the two paths. Over the first training steps of a small language model on real text we
#   measure, for frequent and for rare tokens, how much arrives through each path and how
#   often; then the same share as a curve over a whole run, over three seeds, for TinyLM and
#   for a small transformer (TinyGPT).
# - A tied row moves on every step, even while its token never appears in the input; an untied
#   input row in the same situation does not move at all.
# - What tying saves in real models, as a share of their size, from their published shapes,
#   including small untied models with large vocabularies.
#
# First, the concept page's own three-number demo, recomputed.
#
# The claims tested here come from the essay this course draws on: that the classifier's
# gradient "arrives at every step" while the lookup's arrives occasionally, so the compromise a
# tied row strikes "is settled overwhelmingly in favour of production"; that a rare token's tied
# row "is being shaped continuously even during the long stretches when the token itself never
# appears"; and that tying mattered most when the embedding was a large share of the model.
#
# Live: `minigrad lab` shows the same audit in your browser, untied against tied (see docs/lab.md).

# %% [markdown]
# ## Predict first
#
# Three questions; write your answers down.
#
# 1. A tied table is trained on real text for a hundred steps. Add up the sizes (norms) of the
#    gradients that reach the row of a very frequent word, path by path. What share comes
#    through the classifier: about a quarter, about half, or most? And for a word seen only a
#    handful of times in the whole corpus?
# 2. A rare word does not appear in the input at all for 30 steps. How far does its row move
#    during those steps when the table is tied, and when it is not?
# 3. GPT-2 small has about 124 million parameters and a table of 50,257 x 768. What share of
#    the model is that table, and what share would tying save in Llama-2-7B?

# %%
import re

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn import data, tour
from minigrad.learn.lesson_kit import classifier_share, setup, split_paths
from minigrad.learn.train import batches, split_windows
from minigrad.models import TinyGPT, TinyLM, next_token_windows
from minigrad.nn import functional as F
from minigrad.optim import SGD
from minigrad.tools.viz import GraphvizNotFoundError

lesson = setup(6, minutes=(1.0, 0.2))  # caps BLAS threads, draws headless, makes OUT
OUT, FAST = lesson.out, lesson.fast
rng = np.random.default_rng(6)

# %% [markdown]
# ## One parameter, two roles, one node
#
# `TinyLM` (in `minigrad.models`) is the smallest next-token model in which both maps learn:
# it reads the previous tokens through `emb`, mixes them in a small network, and scores every
# token with `head`. With `tied=True` the head's weight *is* the embedding's weight. We run one
# backward with the ledger recording and draw the graph.

# %%
toy_vocab = ["the", "cat", "sat", "on", "mat", "<eos>"]
toy = TinyLM(len(toy_vocab), embedding_dim=4, hidden=5, context=1, tied=True, dtype=np.float64, rng=0)
toy_ids = np.array([[0], [1], [2], [1]])   # the cat sat cat
toy_targets = np.array([1, 2, 1, 3])       # cat sat cat on
toy_loss = toy.loss(toy_ids, toy_targets)
with mg.ledger(names=toy) as toy_ledger:
    toy_loss.backward()
print(toy_ledger.table(toy.emb.weight, labels=toy_vocab))

graph = mg.draw(toy_loss, params=toy, ledger=toy_ledger)
tied_node = re.search(r'(\w+) \[label="emb\.weight = head\.weight', graph.source).group(1)
incoming = re.findall(rf'(\w+) -> {tied_node} \[label="([^"\\]+)', graph.source)
print(f"edges into the tied parameter ({tied_node}):", incoming)
assert len(incoming) == 2, "the tied parameter should have exactly two incoming gradient edges"
assert sorted(label.split(":")[0].split(" ")[0] for _, label in incoming) == ["dense", "sparse"]
assert toy.emb.weight is toy.head.weight and isinstance(toy.emb.weight.grad, np.ndarray)

svg_path = OUT / "tied_graph.svg"
try:
    mg.tools.viz.render(graph, path=svg_path)
    lesson.announce(svg_path, "TinyLM with tied=True: one parameter node with two incoming edges, the "
                              "lookup's sparse rows and the classifier's dense table")
except GraphvizNotFoundError as error:  # the .dot file is written either way
    print("could not render the drawing:", error)
print("wrote", svg_path.with_suffix(".dot"))

# %% [markdown]
# In the drawing, the yellow ellipse is the one parameter, labelled with both of its names. Two
# backward nodes send into it: `LinearBackward` of the head (orange, dense: all 6 rows) and
# `EmbeddingBackward` of the lookup (green, sparse: the 3 rows that were read). The ledger table
# shows the same thing row by row: rows 3, 4 and 5 ("on", "mat", "<eos>") were never read, so
# the lookup path has nothing for them (`-`), yet each has a gradient from the classifier. The
# table's `.grad` became a dense array: sparse plus dense is dense.
#
# ## The concept page's own numbers
#
# The concept page this course draws on ends its code with a six-token audit: "cat" is read,
# a small fixed context vector is added, and the loss asks for "cat" again, so the "cat" row is
# read and said in the same step. It prints three norms, 0.1850 (untied lookup), 0.3222
# (untied classifier) and 0.5799 (tied shared row). `minigrad tour` rebuilds that audit with
# minigrad's modules (`minigrad.learn.tour`); we reuse its pieces here, run the two backward
# passes under the ledger, and compare.

# %%
PAGE_PRINTED = {"untied lookup": 0.1850, "untied classifier": 0.3222, "tied shared row": 0.5799}
page_weights = tour.seed_weights()  # the page's seed, shapes and scale
cat_norms = {}
for page_tied in (False, True):
    bridge = tour.Bridge(page_weights, tied=page_tied)
    bridge_loss = bridge()
    with mg.ledger(names=bridge) as bridge_ledger:
        bridge_loss.backward()
    cat_row = bridge_ledger.table(bridge.emb.weight, rows=[tour.CAT])
    if page_tied:
        cat_norms["tied shared row"] = cat_row.norm(tour.CAT, "total")
        tied_cat_paths = {path: cat_row.norm(tour.CAT, path) for path in cat_row.paths}
    else:
        cat_norms["untied lookup"] = cat_row.norm(tour.CAT, "total")
        cat_norms["untied classifier"] = bridge_ledger.table(bridge.head.weight, rows=[tour.CAT]).norm(
            tour.CAT, "total")
for name, value in cat_norms.items():
    print(f"{name:>18}: minigrad {value:.4f}   the page printed {PAGE_PRINTED[name]:.4f}")
    assert round(value, 4) == PAGE_PRINTED[name], f"{name}: minigrad gives {value:.6f}"
print("tied row, by path:", {path: round(n, 4) for path, n in tied_cat_paths.items()})

# %% [markdown]
# The three numbers agree to the page's four digits. The tied row's norm is not the sum of the
# other two (0.1850 + 0.3222 = 0.5072, not 0.5799): tied, both paths are computed from the one
# table, so the classifier's path here differs from the untied one, and the vectors of the two
# paths add as vectors. By path, the tied "cat" row gets 0.316 from the classifier and 0.280
# from the lookup: about even, and one step of six tokens says nothing about training. The
# rest of the lesson measures that.
#
# ## The ledger over real text
#
# Now a real corpus: the Python reference documentation that ships with Python
# (`pydoc_data.topics`, `minigrad.learn.data`), tokenized into words and punctuation. We keep the most
# frequent words as the vocabulary, and train a tied `TinyLM` that reads 2 previous tokens, with
# plain SGD, on random batches of a few hundred positions. On every step the ledger splits the
# table's gradient into its two paths, and we keep, per row:
#
# - the number of steps on which each path sent the row something,
# - the sum over steps of the norm of what each path sent (its *traffic*), and
# - the sum over steps of the vectors themselves (with SGD, the row's total displacement is
#   exactly `-lr` times the sum of both).

# %%
vocab_size, batch, steps = (800, 128, 40) if FAST else (2000, 192, 120)
width, hidden, context, lr = 32, 64, 2, 0.5
words = data.tokenize(data.load_text())
vocab = data.Vocabulary.build(words, max_size=vocab_size)
inputs, next_tokens = next_token_windows(vocab.encode(words), context)
V = len(vocab)
print(f"corpus: {len(words):,} tokens; vocabulary: {V} words "
      f"(the rest map to <unk>); {len(next_tokens):,} training positions")
print("most frequent:", vocab.words[1:11])


# split_paths(led, table) (minigrad/learn/lesson_kit.py): the classifier's dense (V, d) gradient and
# the lookup's RowSparse, as the ledger recorded them
model = TinyLM(V, width, hidden, context=context, tied=True, rng=0)
table = model.emb.weight
optimizer = SGD(model.parameters(), lr=lr)
start = table.data.astype(np.float64)

arrivals = {"classifier": np.zeros(V), "lookup": np.zeros(V)}
traffic = {"classifier": np.zeros(V), "lookup": np.zeros(V)}
net = {"classifier": np.zeros((V, width)), "lookup": np.zeros((V, width))}
losses = []
for step in range(steps):
    rows = rng.integers(0, len(next_tokens), batch)
    loss = model.loss(inputs[rows], next_tokens[rows])
    optimizer.zero_grad()
    with mg.ledger(names=model) as led:
        loss.backward()
    classifier, lookup = split_paths(led, table)
    arrivals["classifier"] += np.any(classifier != 0, axis=1)
    traffic["classifier"] += np.linalg.norm(classifier, axis=1)
    net["classifier"] += classifier
    arrivals["lookup"][lookup.indices] += 1
    traffic["lookup"][lookup.indices] += np.linalg.norm(lookup.values, axis=1)
    net["lookup"][lookup.indices] += lookup.values
    optimizer.step()
    losses.append(loss.item())
    if step == 0:
        first_ledger = led
print(f"loss: {losses[0]:.3f} at the first step, {np.mean(losses[-10:]):.3f} over the last 10")

# %% [markdown]
# One step's ledger, for a few rows from the head and the tail of the vocabulary:

# %%
show = [5, 6, 20, 200, V - 1]  # "the" and "," are near the top; V - 1 is among the rarest kept
print(first_ledger.table(table, rows=show, labels=vocab.words))
print("corpus counts:", {vocab.words[r]: int(vocab.counts[r]) for r in show})

# %% [markdown]
# Now all the steps, grouped by how frequent each word is in the corpus.

# %%
displacement = table.data.astype(np.float64) - start
both = net["classifier"] + net["lookup"]
assert np.allclose(displacement, -lr * both, atol=1e-4), "with SGD a row moves by -lr x its summed gradient"
# how much of each row's displacement lies along the classifier's part of it
along_classifier = np.einsum("vd,vd->v", net["classifier"], both) / np.einsum("vd,vd->v", both, both)
traffic_share = traffic["classifier"] / (traffic["classifier"] + traffic["lookup"])

edges = [1, 11, 101, 501, 1001, V] if not FAST else [1, 11, 101, 401, V]
print(f"{'ranks':>11} {'corpus count':>13} {'lookup arrives':>15} {'classifier arrives':>19} "
      f"{'classifier share':>17} {'share of displacement':>22}")
bins = []
for lo, hi in zip(edges[:-1], edges[1:]):
    part = slice(lo, hi)
    from_classifier, from_lookup = traffic["classifier"][part].sum(), traffic["lookup"][part].sum()
    share = from_classifier / (from_classifier + from_lookup)
    bins.append((lo, hi, arrivals["lookup"][part].mean() / steps, share, np.median(along_classifier[part])))
    print(f"{lo:>5}-{hi - 1:<5} {vocab.counts[hi - 1]:>6}-{vocab.counts[lo]:<6} {bins[-1][2]:>15.1%} "
          f"{arrivals['classifier'][part].mean() / steps:>19.0%} {share:>17.1%} {bins[-1][4]:>22.1%}")

assert np.all(arrivals["classifier"][1:] == steps), "the classifier sends every row a gradient on every step"
assert bins[0][2] > 0.9 > 0.2 > bins[-1][2], "the lookup reaches frequent rows on most steps, rare seldom"
assert all(b[3] > 0.5 for b in bins), "in every frequency band most of the traffic is the classifier's"
assert bins[-1][3] > bins[0][3], "the rarer the word, the larger the classifier's share"
assert bins[-1][4] > bins[0][4], "the rarer the word, the more of its displacement the classifier explains"

# %%
counts = vocab.counts.astype(np.float64)
fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
ax = axes[0]
ax.semilogx(counts[1:], arrivals["lookup"][1:] / steps, ".", ms=3, alpha=0.4, label="lookup path")
ax.axhline(1.0, color="C1", lw=2, label="classifier path (every row, every step)")
ax.set(xlabel="how often the word occurs in the corpus", title="How often each path arrives",
       ylabel="share of steps on which the path sent the row a gradient")
ax.legend(fontsize=8, loc="center left")
ax = axes[1]
ax.semilogx(counts[1:], traffic_share[1:], ".", ms=3, alpha=0.3, color="grey", label="one row")
for lo, hi, _, share, along in bins:
    centre = np.sqrt(counts[lo] * counts[hi - 1])
    ax.plot(centre, share, "o", color="C1", ms=7)
    ax.plot(centre, along, "s", color="C3", ms=7)
ax.plot([], [], "o", color="C1", label="classifier share of the traffic (band)")
ax.plot([], [], "s", color="C3", label="classifier share of the displacement (band median)")
ax.axhline(0.5, color="k", ls=":", lw=1)
ax.set(xlabel="how often the word occurs in the corpus", ylabel="classifier / (classifier + lookup)",
       title=f"Where a tied row's gradient comes from ({steps} steps)", ylim=(0, 1.02))
ax.legend(fontsize=8, loc="lower left")
lesson.save(fig, "tied_row_gradient_sources.png",
            "the classifier's share of a tied row's gradient against the word's frequency: most of "
            "it, nearly all for rare words")

# %% [markdown]
# What we measured (a full run: 120 steps of 192 positions, vocabulary 2,000; the reduced run
# prints slightly different numbers, with the same pattern):
#
# - **How often.** The classifier path sends every row a gradient on every step, as the essay
#   says. The lookup path reaches the ten most frequent words on every step, and the rarest
#   words on one or two steps in a hundred.
# - **How much.** Counting the size of what arrives, the classifier brings most of it in every
#   band: about 85% for the hundred most frequent words, rising to about 96% for the rarest.
#   At the start of training the essay's direction is right. "Overwhelmingly" fits the rare
#   words; a word that is read on every step still gets about 15% of its gradient from the
#   lookup. Whether this lasts is the question of the section after next.
# - **Where the row goes.** Sizes are not directions: pushes that point different ways cancel.
#   Measured as the share of each row's actual displacement that lies along the classifier's
#   summed gradient, the classifier explains about 90% of the movement of the ten most frequent
#   rows and all but a few percent for the rest. The most frequent rows are where the lookup has
#   its say, and it is a minority say.
#
# These numbers belong to this model (a tanh MLP over 2 tokens, 32 wide) and this corpus; the
# balance between paths depends on how large the gradient reaching the bottom of a network is,
# which depth and normalisation change. The pattern by frequency comes from counting: how often
# the lookup arrives grows with how often a word is read; how often the classifier arrives does not.
#
# ## A tied row moves while its token is absent
#
# Draw the next batches in advance, find the words that appear in *none* of their inputs, and
# watch those rows, step by step: in the tied model we keep training, and in an untied model of
# the same shape trained on the same batches.

# %%
window = 15 if FAST else 30
window_batches = [rng.integers(0, len(next_tokens), batch) for _ in range(window)]
read_in_window = np.unique(np.concatenate([inputs[rows].ravel() for rows in window_batches]))
absent = np.setdiff1d(np.arange(1, V), read_in_window)
print(f"{len(absent)} of {V - 1} words are never read during the next {window} steps")

untied = TinyLM(V, width, hidden, context=context, tied=False, rng=0)
untied_optimizer = SGD(untied.parameters(), lr=lr)
moved = {"tied table": [], "untied input table": [], "untied output table": []}
for rows in window_batches:
    before = {"tied table": table.data[absent].copy(),
              "untied input table": untied.emb.weight.data[absent].copy(),
              "untied output table": untied.head.weight.data[absent].copy()}
    for lm, opt in ((model, optimizer), (untied, untied_optimizer)):
        loss = lm.loss(inputs[rows], next_tokens[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = {"tied table": table.data[absent], "untied input table": untied.emb.weight.data[absent],
             "untied output table": untied.head.weight.data[absent]}
    for name in moved:
        moved[name].append(np.linalg.norm(after[name] - before[name], axis=1))
moved = {name: np.array(steps_moved) for name, steps_moved in moved.items()}  # (window, absent rows)

for name, per_step in moved.items():
    print(f"{name:>20}: median row change per step {np.median(per_step):.2e}, "
          f"rows that moved on every step: {np.mean(np.all(per_step > 0, axis=0)):.0%}")
assert np.all(moved["tied table"] > 0), "every absent tied row should move on every step"
assert np.all(moved["untied input table"] == 0), "an untied input row nobody reads must not change at all"
assert np.all(moved["untied output table"] > 0)

untied_input_rows_per_step = [len(np.unique(inputs[rows])) / V for rows in window_batches]
print(f"share of rows that change per step: tied 100%, untied input table "
      f"{np.mean(untied_input_rows_per_step):.0%} on average")

fig, ax = plt.subplots(figsize=(7, 4.3))
step_axis = np.arange(1, window + 1)
for name, colour in zip(moved, ["C1", "C0", "C2"]):
    travelled = np.cumsum(moved[name], axis=0)  # path length travelled by each absent row
    ax.plot(step_axis, np.median(travelled, axis=1), color=colour, lw=2, label=f"{name} (median)")
    ax.fill_between(step_axis, np.percentile(travelled, 10, axis=1), np.percentile(travelled, 90, axis=1),
                    color=colour, alpha=0.2)
ax.set(xlabel="step (none of these words is read on any of them)", ylabel="distance travelled by the row",
       title=f"{len(absent)} words absent from the input for {window} steps")
ax.legend(fontsize=8)
lesson.save(fig, "absent_rows_move.png",
            "distance travelled by rows of words never read in the window: tied rows move, untied "
            "input rows stay put")

# %% [markdown]
# The untied input rows stay exactly where they were: not a single bit changes, because their
# gradient is an exact zero (lesson 4) and plain SGD adds nothing to a zero. The same words'
# rows in the untied output map move on every step, and in the tied model that movement is
# the row itself: the essay's claim holds, measured step by step. (An optimizer with momentum
# or weight decay would move even the untied input rows; that is lesson 7.)
#
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
# The material's claim is about transformers, so beside TinyLM we do the same for a tied
# `TinyGPT` on the same vocabulary (width 64, 4 heads, 2 blocks, 32 tokens of context,
# predicting at every position, 8 windows a step). Its table is read by the lookup at the
# bottom (`transformer.wte`) and scores at the top (`lm_head`); the ledger names the two paths
# the same way. A prediction first: in the transformer, the lookup's gradient comes back
# through two blocks and a LayerNorm before the output map. Will the classifier's share of a
# tied row's gradient end up larger than in TinyLM, about the same, or smaller?

# %%
CURVE_SEEDS = (0, 1, 2)
CURVE_STEPS, CURVE_EVERY, CURVE_WINDOW = (250, 50, 5) if FAST else (1000, 100, 10)  # same model, shorter
GPT_STEPS, GPT_EVERY, GPT_WINDOW, GPT_CONTEXT = (60, 20, 3, 16) if FAST else (600, 60, 6, 32)
lm_vocab = data.Vocabulary.build(words, max_size=2000)
lm_windows, _ = split_windows(lm_vocab.encode(words), 3, valid_fraction=0.1, pieces=20)
gpt_windows, _ = split_windows(lm_vocab.encode(words), GPT_CONTEXT, valid_fraction=0.1, pieces=20,
                               every_position=True)
share_bands = {"100 most frequent": np.arange(1, 101),
               "rank 1,000 and beyond": np.arange(1000, len(lm_vocab))}
CURVE_MODELS = {  # name -> (build(seed), its tied table, training windows, batch, steps, every, window)
    # TinyLM predicts 128 tokens a step, TinyGPT 8 x 32 = 256: over the run they see about as many
    "TinyLM": (lambda seed: TinyLM(len(lm_vocab), 64, 128, context=3, tied=True, rng=seed),
               lambda m: m.emb.weight, lm_windows, 128, CURVE_STEPS, CURVE_EVERY, CURVE_WINDOW),
    "TinyGPT": (lambda seed: TinyGPT(len(lm_vocab), GPT_CONTEXT, 64, 4, 2, tied=True, rng=seed),
                lambda m: m.transformer.wte.weight, gpt_windows, 8, GPT_STEPS, GPT_EVERY, GPT_WINDOW),
}


def share_curve(name: str, seed: int) -> tuple[list[int], dict[str, list[float]]]:
    """Train one tied model; return the first step of each ledger window and each band's share."""
    build, table_of, windows_, batch_size, n_steps, every, width_ = CURVE_MODELS[name]
    lm = build(seed)
    tied_table = table_of(lm)
    opt = mg.optim.AdamW(lm.parameters(), lr=3e-3, weight_decay=0.01)
    stream = batches(windows_, batch_size, np.random.default_rng(seed + 1))
    starts, shares = [], {band: [] for band in share_bands}
    for step in range(n_steps):
        ids, targets = next(stream)
        loss = lm.loss(ids, targets)
        opt.zero_grad()
        if step % every >= width_:
            loss.backward()
        else:
            with mg.ledger(names=lm) as led:
                loss.backward()
            classifier, lookup = split_paths(led, tied_table)
            if step % every == 0:
                sent = {"classifier": np.zeros(len(lm_vocab)), "lookup": np.zeros(len(lm_vocab))}
            sent["classifier"] += np.linalg.norm(classifier, axis=1)
            sent["lookup"][lookup.indices] += np.linalg.norm(lookup.values, axis=1)
            if step % every == width_ - 1:
                starts.append(step - width_ + 1)
                for band, rows in share_bands.items():
                    shares[band].append(classifier_share(sent, rows))
        opt.step()
    return starts, shares


curve_starts, curve = {}, {}  # model -> window starts; (model, band) -> (seeds, windows) shares
for name in CURVE_MODELS:
    by_seed = {seed: share_curve(name, seed) for seed in CURVE_SEEDS}
    curve_starts[name] = by_seed[CURVE_SEEDS[0]][0]
    for band in share_bands:
        curve[name, band] = np.array([by_seed[seed][1][band] for seed in CURVE_SEEDS])
late = {name: slice(len(starts) * 2 // 3, None) for name, starts in curve_starts.items()}  # the last third
late_mean = {key: c[:, late[key[0]]].mean(axis=1) for key, c in curve.items()}  # (seeds,)
print(f"classifier share of a tied row's gradient traffic, over {len(CURVE_SEEDS)} seeds (min-max):")
print(f"{'':>32} {'first window':>14} {'second window':>14} {'last third, mean':>18}")
for (name, band), c in curve.items():
    print(f"{name + ', ' + band:>32} {c[:, 0].min():>6.0%}-{c[:, 0].max():<7.0%} "
          f"{c[:, 1].min():>6.0%}-{c[:, 1].max():<7.0%} "
          f"{late_mean[name, band].min():>9.0%}-{late_mean[name, band].max():<8.0%}")
FREQUENT, RARE = share_bands
for name in CURVE_MODELS:
    assert curve[name, RARE][:, 0].min() > 0.85, f"{name}: at first the classifier sends most"
lm_late = {band: late_mean["TinyLM", band] for band in share_bands}
assert lm_late[FREQUENT].max() < 0.65, "later, a frequent row's gradient is not mostly the classifier's"
assert lm_late[FREQUENT].min() > 0.35, "... nor mostly the lookup's: about even"
assert lm_late[RARE].max() < 0.8, "later, not overwhelmingly the classifier's even for rare rows"
if not FAST:  # the short runs stop before the bands separate
    assert lm_late[RARE].min() > lm_late[FREQUENT].max(), \
        "in every seed a rare row still gets more of its gradient from the classifier than a frequent one"
    for band in share_bands:
        gpt = curve["TinyGPT", band]
        assert late_mean["TinyGPT", band].max() < gpt[:, 0].min(), f"TinyGPT, {band}: the share falls too"
        assert late_mean["TinyGPT", band].min() > lm_late[band].max() + 0.1, \
            f"{band}: in every seed TinyGPT's tied rows lean further to the classifier than TinyLM's"
    assert late_mean["TinyGPT", RARE].max() < 0.85, "by the end not overwhelmingly, even for rare rows"
    assert late_mean["TinyGPT", FREQUENT].min() > 0.6, "but more than even, even for frequent rows"
    assert late_mean["TinyGPT", RARE].min() > late_mean["TinyGPT", FREQUENT].max(), "and rare above frequent"

fig, axes = plt.subplots(1, 2, figsize=(12, 4.3), sharey=True)
for ax, name in zip(axes, CURVE_MODELS):
    for band, colour in zip(share_bands, ["C0", "C3"]):
        c = curve[name, band]
        seen_tokens = np.array(curve_starts[name]) * CURVE_MODELS[name][2].positions * CURVE_MODELS[name][3]
        ax.plot(seen_tokens / 1000, np.median(c, axis=0), "o-", ms=3, color=colour,
                label=f"{band} (median of seeds)")
        ax.fill_between(seen_tokens / 1000, c.min(axis=0), c.max(axis=0), color=colour, alpha=0.25)
    ax.axhline(0.5, color="k", ls=":", lw=1)
    ax.set(xlabel=f"thousands of tokens predicted in training (AdamW, tied {name})", ylim=(0, 1.02),
           title=f"{name}: the tied compromise over training ({len(CURVE_SEEDS)} seeds, range shaded)")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8)
axes[0].set_ylabel("classifier / (classifier + lookup)")
lesson.save(fig, "tied_share_over_training.png",
            "the classifier's share of a tied row's gradient over training, frequent against rare "
            "words, in TinyLM (left) and TinyGPT (right), the range over seeds shaded")

# %% [markdown]
# The first window reproduces the early picture in both models: most of a frequent row's
# gradient and nearly all of a rare row's come from the classifier (TinyLM 68-69% and 93-94%,
# TinyGPT 86-87% and 97-98%, three seeds). In TinyLM it does not last. Within the first
# hundred steps the model stops predicting uniformly, the probabilities of the wrong words
# fall, and the classifier's pushes shrink with them. Over the last third of the 1,000 steps a
# frequent word's row gets 54-55% of its gradient from the classifier and a rare word's row
# 56-59%, and the frequent band is still drifting down. (Run to lesson 8's full 4,000 steps,
# with this code and `CURVE_STEPS = 4000`, the two bands end at about 50% and 60%, three
# seeds. The fast run stops at 250 steps, while both bands are still near 60%.)
#
# In the transformer the classifier keeps more. Over the last third of its 600 steps (about as
# many predicted tokens as TinyLM's 1,000) a frequent word's tied row still gets 67-71% of its
# gradient from the classifier and a rare word's 76-78%, in every seed above TinyLM's by more
# than ten points, and rare above frequent. Its curves fall too, and are still falling when
# the run ends: TinyGPT learns more slowly per token here (in lesson 10, on a similar budget,
# its held-out loss stays above TinyLM's), so its end is earlier in its own training than
# TinyLM's is in TinyLM's. We have not isolated why the transformer's classifier keeps the
# larger share: the two models differ in depth, normalisation, initial scale and context, and
# each of these changes how large the gradient reaching the bottom of the network is. Lesson
# 10 shows the consequence: TinyGPT's tied table ends up with the geometry of its output map.
#
# So the essay's "settled overwhelmingly in favour of production" describes the start of
# training in both models. Later, in TinyLM, the tied row is close to an even compromise; in
# TinyGPT it leans clearly, not overwhelmingly, toward production: about two thirds of the
# traffic for frequent words and three quarters for rare ones by the end of our run.
#
# ## Check against finite differences
#
# The ledger's two paths must add up to the true gradient of the tied loss. We check that sum
# for the toy model, and the tied gradient itself with `minigrad.tools.gradcheck` on a small tied
# model written out with functional ops (float64).

# %%
toy_paths = toy_ledger.path_grads(toy.emb.weight)
path_sum = sum(mg.engine.sparse.to_dense(g) for g in toy_paths.values())
assert np.allclose(path_sum, toy.emb.weight.grad), "the two paths add up to .grad"

check_ids, check_targets = np.array([2, 0, 2, 4]), np.array([0, 2, 3, 1])
mix = mg.tensor(rng.standard_normal((3, 3)))
E_check = mg.tensor(rng.standard_normal((5, 3)), requires_grad=True, name="E")


def tied_loss(E: mg.Tensor) -> mg.Tensor:
    """Read with E, mix, score with the same E: both paths into one table."""
    h = (F.embedding(check_ids, E) @ mix).tanh()
    return F.cross_entropy(F.linear(h, E), check_targets)


print(mg.gradcheck(tied_loss, [E_check]))

# %% [markdown]
# ## What tying saves in real models
#
# A tied model stores one `V x d` table instead of two. How much that is depends on the rest of
# the model. We count every parameter from the published configurations (the `config.json` of
# each model as released on the Hugging Face Hub, which matches the papers), rather than
# trusting rounded totals:
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
#
# The counts should come out at the published sizes: GPT-2 small 124M (its paper's table
# says 117M; the released weights hold 124,439,808), Llama-2-7B 6.74B, Llama-3.2-1B 1.24B
# (Meta's card rounds to 1.23B), Gemma-2B 2.51B (its report lists 1,981,884,416 non-embedding
# parameters, and counts its table as 256,128 rows: a padded vocabulary). The Pythia suite
# (GPT-NeoX blocks: GPT-2's layout with biases and LayerNorms, no learned positions) publishes
# exact totals: 70,426,624, 162,322,944 and 405,334,016.

# %%
MODELS = {
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
}


def body_parameters(c: dict) -> int:
    """Every parameter except the token table(s)."""
    d = c["d"]
    if "positions" in c:  # GPT-2 and GPT-NeoX: biases and LayerNorms (scale and shift), learned positions
        block = (d * 3 * d + 3 * d) + (d * d + d) + (d * c["mlp"] + c["mlp"]) + (c["mlp"] * d + d) + 2 * 2 * d
        return c["layers"] * block + c["positions"] * d + 2 * d
    # Llama and Gemma: no biases, RMSNorm (one scale), grouped key/value heads, gated MLP (3 matrices)
    attention = d * c["heads"] * c["head"] * 2 + d * c["kv_heads"] * c["head"] * 2
    block = attention + 3 * d * c["mlp"] + 2 * d
    return c["layers"] * block + d


print(f"{'model':>13} {'V x d':>13} {'total as released':>18} {'published':>10} {'one table':>10} "
      f"{'both maps, untied':>18} {'tying saves':>12}")
savings = {}
for name, c in MODELS.items():
    one_table = c["V"] * c["d"]
    body = body_parameters(c)
    released = body + one_table * (1 if c["tied"] else 2)
    untied_total = body + 2 * one_table
    assert abs(released / c["published"] - 1) < 0.005, f"{name}: {released:,} is not the published size"
    savings[name] = (one_table / released, one_table / untied_total, 2 * one_table / untied_total)
    print(f"{name:>13} {one_table:>13,} {released:>18,} {c['published']:>10.3g} {savings[name][0]:>10.1%} "
          f"{savings[name][2]:>18.1%} {savings[name][1]:>12.1%}   ({'tied' if c['tied'] else 'untied'})")

essay_table = 120_000 * 4_000
print(f"the essay's example table, 120,000 x 4,000 = {essay_table:,} numbers")
assert 0.45e9 < essay_table < 0.5e9, "'close to half a billion'"
for name in ("Pythia-70M", "Pythia-160M", "Pythia-410M"):  # published exactly: the count must be exact
    c = MODELS[name]
    assert body_parameters(c) + 2 * c["V"] * c["d"] == c["published"], name
assert savings["Llama-2-7B"][1] < 0.03 < 0.15 < min(savings[m][1] for m in ("Llama-3.2-1B", "Gemma-2B"))
large_four = ("GPT-2 small", "Llama-2-7B", "Llama-3.2-1B", "Gemma-2B")
assert max(savings[m][2] for m in large_four) < 0.5, "in none of the four do two maps make up most of it"
assert savings["Pythia-70M"][2] > 0.7 and savings["Pythia-160M"][2] > 0.45, \
    "in the small untied models the two maps are most of the model, or close to half"

fig, ax = plt.subplots(figsize=(8, 6))
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
ax.legend(fontsize=8, loc="lower right")
lesson.save(fig, "tying_savings.png",
            "the share of parameters one V x d table takes in real models, and what tying saves")

# %% [markdown]
# The pattern the essay describes is there for the four larger models. In GPT-2 small one
# table is almost a third of the model (31%), so tying saved nearly a quarter of what an
# untied GPT-2 small would have been.
# Llama-2-7B is untied, and tying would save under 2%. The two recent small models with large
# vocabularies are tied, and there one table is about a fifth of the model.
#
# One sentence of the essay does not match those four: that two untied maps "could easily be
# most of a one-billion-parameter model". Untied, the two maps would be 47% of GPT-2 small,
# 35% of Llama-3.2-1B and of Gemma-2B, and 4% of Llama-2-7B: none reaches half (the third bar).
# (Its example table, 120,000 x 4,000, does hold 480 million numbers, but none of the four
# pairs a width of 4,000 with a body small enough for that to be most of it.)
#
# Small untied models with a large vocabulary do bear the sentence out, at a smaller size than
# it names. The Pythia models keep two separate maps of a 50,304-token vocabulary: they are
# 73% of Pythia-70M, 48% of Pythia-160M and 25% of Pythia-410M, and tying would have saved
# 37%, 24% and 13%. So "most of the model" happens, in models of tens of millions of
# parameters, not of a billion.
#
# ## Exercise
#
# Run `minigrad exercise 6`: it copies the stub to
# `minigrad-exercises/06_tying.py`, in the folder you run it from (in a
# notebook, define the function in a cell instead and run `minigrad.check(6, globals())`).
# There, write
# `tied_row_gradient(row, ids, upstream, H, P, targets)`: the full gradient of one row of a
# tied table, given what each path needs. The lookup path needs the gradient that arrived at
# every position that read the row; the classifier path needs `h`, `p` and the targets at every
# scoring position. Then run `minigrad check 6`. The check compares your answer with finite
# differences and says which part is missing: a whole path, one occurrence of a repeated id, or
# a piece of the classifier's formula.
