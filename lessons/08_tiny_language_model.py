# %% [markdown]
# # Lesson 8: Training a tiny language model, and meeting TinyGPT
#
# The key idea: tying removes a whole `(V, d)` table, and in a small model whose vocabulary is
# large next to it that is nearly half the parameters. Does the model pay for it? We train one
# small word-level model tied and untied on real text with the same budget, over three seeds,
# beside an untied control narrowed to the tied parameter count; then the small transformer
# the later lessons train, the same comparison on it.
#
# ## What you will see
#
# The text is the help pages of the Python language reference, which ship with Python
# (`pydoc_data.topics`); `MINIGRAD_TEXT=path/to/file.txt` (or the path as an argument when you
# run this file as a script) trains on your own text instead.
#
# The model is `minigrad.models.TinyLM`: it reads the previous `C` words through an embedding
# table `E` (V rows of width d), mixes them with one tanh layer, and scores every vocabulary
# entry with an output map `W` (V, d). Tied, `W` *is* `E`: one Parameter with two names.
#
# - Where the loss starts (`log V`) and the line to beat: the entropy of the word frequencies.
# - What `train()` does, three steps written out by hand; loss curves; three seeds and a t-interval.
# - A checkpoint written to disk and read back with the tie intact.
# - TinyGPT (`minigrad.models.TinyGPT`), a two-block transformer with GPT-2's layout and
#   nanoGPT's parameter names, tied, untied and size-matched over three seeds.
#
# The course's milestone: from here on the models train on your pieces of lessons 4 to 8
# wherever your copies pass their checks (the run's first lines say whose).
#
# Figures quoted in the text come from the full-size run, `minigrad lesson 8 --no-pause`
# (three seeds, min-max). The small run (`--small`) prints its own, smaller figures and says
# which verdicts it does not test.

# %% [markdown]
# ## Predict first
#
# With a vocabulary of 2,000 words and width 64, the untied model has about 289,000
# parameters and the tied one 128,000 fewer (44% less). Both train for 3,000 steps of 128
# windows on the same ~100,000 words of text, with the same AdamW settings.
#
# After training, will the tied model's validation loss be clearly worse, about the same, or
# clearly better than the untied one's? And which of the two will fit its training text more
# closely?

# %%
import inspect
import os
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn.course import milestone, model_pieces
from minigrad.learn.data import Vocabulary, load_text, tokenize
from minigrad.learn.kit import (
    hold,
    near_misses_take_the_push,
    setup,
    t_interval,
    tying_in_tinygpt,
    tying_in_tinylm,
)
from minigrad.learn.train import Windows, batches, format_rate, split_windows
from minigrad.learn.train import train_step as minigrads_train_step
from minigrad.models import TinyGPT, TinyLM
from minigrad.models.tinygpt import Block
from minigrad.nn import functional as F

lesson = setup(8, minutes=(2.7, 0.4))  # caps BLAS threads, draws headless, makes OUT
OUT = lesson.out

# Every size of the lesson, for the full run and for MINIGRAD_SMALL=1 (the tests), in one place.
S = lesson.sizes(
    full=dict(vocab=2000, width=64, hidden=128, batch=128, steps=3000, race_rounds=10, race_steps=25,
              gpt_context=32, gpt_heads=4, gpt_layers=2, gpt_batch=8, gpt_steps=600),
    small=dict(vocab=500, width=32, hidden=64, batch=64, steps=300, race_rounds=6, race_steps=10,
              gpt_context=16, gpt_heads=2, gpt_layers=1, gpt_batch=8, gpt_steps=60),
)
VOCAB, WIDTH, HIDDEN, BATCH, STEPS = S.vocab, S.width, S.hidden, S.batch, S.steps
CONTEXT = 3                       # C: previous words read to predict the next
LR, WEIGHT_DECAY = 3e-3, 0.01     # AdamW
SEED = 0


def text_path() -> str | None:
    """MINIGRAD_TEXT, or the first argument when this file runs as a script; None: the default corpus."""
    this_file = globals().get("__file__")
    as_script = this_file and len(sys.argv) > 1 and Path(sys.argv[0]).resolve() == Path(this_file).resolve()
    return os.environ.get("MINIGRAD_TEXT") or (sys.argv[1] if as_script else None)


# %%
mine = model_pieces(8)  # your pieces from lessons 4-8 that pass their checks, minigrad's for the rest
print(milestone(mine))

# %% [markdown]
# ## The text, the vocabulary, the split
#
# Words, numbers and punctuation marks are tokens. We keep the `VOCAB` most frequent; every
# other word becomes `<unk>` (id 0). Validation text is held out from twenty places spread
# over the corpus (the last tenth of each twentieth), so it is not all one topic, and no
# window crosses from training text into held-out text.

# %%
path = text_path()
words = tokenize(load_text(path))
vocab = Vocabulary.build(words, max_size=VOCAB)
token_ids = vocab.encode(words)
V = len(vocab)
train_data, valid_data = split_windows(token_ids, CONTEXT, valid_fraction=0.1, pieces=20)

print(f"text: {path or 'pydoc_data.topics (the default corpus)'}")
print(f"{len(words):,} tokens, {len(set(words)):,} distinct; vocabulary V = {V:,} "
      f"(<unk> covers {np.mean(token_ids == 0):.1%} of the text)")
print(f"windows of {CONTEXT} words -> next word: {len(train_data):,} for training, "
      f"{len(valid_data):,} held out")
print("most frequent:", " ".join(vocab.words[1:16]))

# %% [markdown]
# ## Two models, one difference
#
# Both models are built from the same seed, so the layers they share start identical; the
# only difference is whether the output map has its own table.

# %%
def build(tied: bool, seed: int = SEED, width: int = WIDTH) -> TinyLM:
    """TinyLM built untied, then tied with `tie_weights` (yours once it passes lesson 6's check)."""
    return mine.build(TinyLM(V, width, HIDDEN, CONTEXT, tied=False, rng=seed), tied)


def adamw(model: mg.nn.Module):
    """The lesson's AdamW; its arithmetic on each row is your lazy_adamw_rows once it passes."""
    return mine.adamw(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)


# %%
tied_model, untied_model = build(tied=True), build(tied=False)
print(f"{'parameter':<12} {'shape':>12} {'tied':>9} {'untied':>9}")
for name, p in untied_model.named_parameters():
    in_tied = dict(tied_model.named_parameters()).get(name)
    tied_size = f"{in_tied.size:,}" if in_tied is not None else "shared"
    print(f"{name:<12} {str(p.shape):>12} {tied_size:>9} {p.size:>9,}")
n_tied, n_untied = tied_model.num_parameters(), untied_model.num_parameters()
print(f"{'total':<12} {'':>12} {n_tied:>9,} {n_untied:>9,}")
print("tied names:", tied_model.aliases()["emb.weight"])
print(f"tying saves V * d = {V * WIDTH:,} numbers: {1 - n_tied / n_untied:.0%} of the untied model")
assert np.array_equal(tied_model.up.weight.data, untied_model.up.weight.data), "same seed, same layers"
assert n_untied - n_tied == V * WIDTH, "tying removes exactly one (V, d) table"
assert tied_model.head.weight is tied_model.emb.weight

# %% [markdown]
# ## Where the loss starts, and the line to beat
#
# TinyLM starts with small rows, so the first logits are all close to 0 and the softmax is
# close to uniform: the loss of a uniform guess over V words is `log V`. A second reference
# is a model that ignores context and always predicts the word frequencies of the training
# text (smoothed by adding one to every count, so that no held-out word gets probability 0).
# We evaluate that model with the same code as the real ones: a module whose logits are the
# same `log p` at every position.

# %%
class Unigram(mg.nn.Module):
    """Ignores its input: logits log p_i at every position, p from (smoothed) training counts."""

    def __init__(self, counts: np.ndarray):
        super().__init__()
        self.log_p = np.log(counts / counts.sum())

    def forward(self, ids: np.ndarray) -> mg.Tensor:
        return mg.tensor(np.broadcast_to(self.log_p, (len(ids), self.log_p.size)))


# %%
train_counts = np.bincount(train_data.targets, minlength=V)
unigram = Unigram(train_counts + 1.0)
log_v = float(np.log(V))
start_loss = mine.mean_loss_of(tied_model, valid_data)
unigram_valid = mine.mean_loss_of(unigram, valid_data)
print(f"log V = {log_v:.3f} nats; untrained tied model on held-out text: {start_loss:.3f}")
print(f"unigram model (training frequencies, add-one) on held-out text: {unigram_valid:.3f}")
assert abs(start_loss - log_v) < 0.05 * log_v, "an untrained TinyLM should start near log V"
assert unigram_valid < log_v, "word frequencies alone should beat a uniform guess"

# %% [markdown]
# ## The tie, checked against finite differences
#
# In the tied model one table receives two gradients: the lookup's sparse rows and the output
# map's dense `(p - y) h` rows. Before training on that sum, we check it. The loss is written
# as a function of the table alone (the other layers are held fixed), in float64, and given the
# same tensor in both roles; `gradcheck` compares its backward with central differences. Then
# the model's own backward must give the same gradient.

# %%
def loss_with_tables(model: TinyLM, table_in: mg.Tensor, table_out: mg.Tensor, ids: np.ndarray,
                     targets: np.ndarray) -> mg.Tensor:
    """TinyLM's loss with the read table and the said table passed in: ids (N, C), targets (N,)."""
    x = F.embedding(ids, table_in).reshape(len(ids), -1)
    h = model.down(model.up(x).tanh())
    return F.cross_entropy(F.linear(h, table_out), targets)


# %%
small = mine.build(TinyLM(12, 4, 6, CONTEXT, tied=False, dtype=np.float64, rng=1), tied=True)
few = Windows(np.array([[1, 5, 1], [0, 1, 11], [3, 3, 7]]), np.array([5, 11, 2]))
table = mg.tensor(small.emb.weight.data.copy(), requires_grad=True, name="E (read and said)")
with mine.use():  # your Embedding and CrossEntropy, once they pass, inside the checked loss
    print(mg.gradcheck(lambda E: loss_with_tables(small, E, E, few.ids, few.targets), [table]))
    loss_with_tables(small, table, table, few.ids, few.targets).backward()
    small.loss(few.ids, few.targets).backward()
assert np.allclose(small.emb.weight.grad, table.grad), "the tied gradient is the one checked"
print("TinyLM's tied gradient equals the checked gradient of both paths together")

# %% [markdown]
# ## What `train()` does
#
# `minigrad.learn.train.train` runs the loop every lesson from here on uses. It draws the
# training windows it will evaluate on, then calls the training step, `train_step(model,
# optimizer, ids, targets)`, batch after batch, and now and then the evaluation, `mean_loss`.
# Both are your exercise. We take three steps by hand with the same draws and compare the
# weights with those `train()` produces.

# %%
def three_steps(step, model: mg.nn.Module) -> list[float]:
    """Three calls of `step` on the first three batches train() draws (after its evaluation sample)."""
    draws = np.random.default_rng(SEED + 1)
    draws.choice(len(train_data), BATCH, replace=False)  # train()'s sample of training windows
    stream, optimizer = batches(train_data, BATCH, draws), adamw(model)
    with mine.use():
        return [step(model, optimizer, *next(stream)) for _ in range(3)]


# %%
by_hand, by_train = build(tied=True), build(tied=True)
hand_losses = three_steps(mine.train_step, by_hand)
run = mine.train(by_train, adamw(by_train), train_data, valid_data.subset(np.arange(BATCH)), steps=3,
                 batch_size=BATCH, rng=SEED + 1, progress=False)
print("losses by hand:", np.round(hand_losses, 4), " by train():", np.round(run.batch_loss, 4))
assert all(np.array_equal(a.data, b.data) for a, b in zip(by_hand.parameters(), by_train.parameters()))
print("after 3 steps every parameter is identical: train() is the step in a loop, plus evaluation")
if mine.is_yours("train_step"):  # your step against minigrad's, on the same three batches
    theirs = build(tied=True)
    three_steps(minigrads_train_step, theirs)
    difference = max(np.abs(a.data - b.data).max() for a, b in zip(by_hand.parameters(), theirs.parameters()))
    print(f"your train_step against minigrad's after 3 steps: largest difference {difference:.1e}")

# %% [markdown]
# ## Training, same budget
#
# `minigrad.learn.train.train` draws shuffled batches of windows, runs forward, backward and an
# AdamW step, and every tenth of the run evaluates on all held-out windows and on a sample of
# training windows of the same size. The table gives the seconds each run spent training
# (evaluation excluded); they are not a speed comparison, which comes after the table.

# %%
histories = {}
for label, model in (("tied", tied_model), ("untied", untied_model)):
    histories[label] = mine.train(model, adamw(model), train_data, valid_data, steps=STEPS, batch_size=BATCH,
                                  eval_every=max(1, STEPS // 10), rng=SEED + 1, label=f"{label:<6}")

# %%
print(f"\n{'':<7} {'params':>8} {'valid':>7} {'best valid (step)':>18} {'train':>7} {'gap':>6} "
      f"{'seconds':>8}")
for label, h in histories.items():
    params = n_tied if label == "tied" else n_untied
    best = int(np.argmin(h.valid_loss))
    print(f"{label:<7} {params:>8,} {h.valid_loss[-1]:>7.3f} {h.valid_loss[best]:>10.3f} "
          f"({h.eval_steps[best]:>5}) {h.train_loss[-1]:>7.3f} {h.valid_loss[-1] - h.train_loss[-1]:>6.3f} "
          f"{h.train_seconds:>8.1f}")
for label, h in histories.items():
    assert h.valid_loss[-1] < h.valid_loss[0], f"{label}: training should lower the validation loss"
    assert h.train_loss[-1] < h.train_loss[0], f"{label}: training should lower the training loss"
    assert h.valid_loss[-1] < unigram_valid, f"{label}: the model should beat the context-free baseline"

# %% [markdown]
# ## Which model trains faster
#
# Two runs one after the other compare two moments of the machine as much as two models. So
# we time them taking turns: fresh copies of both train in short rounds on the same batches,
# tied then untied, then untied then tied. Whatever else the machine does slows the two
# neighbours of a round alike, so the ratio of each round's two speeds, and its median over
# the rounds, is what we compare.

# %%
ROUNDS, ROUND_STEPS = S.race_rounds, S.race_steps
few_valid = valid_data.subset(np.arange(BATCH))  # train() evaluates at a round's ends: keep that cheap
racers = {"tied": build(tied=True), "untied": build(tied=False)}
optimizers = {label: adamw(m) for label, m in racers.items()}
rates: dict[str, list[float]] = {label: [] for label in racers}
for round_ in range(ROUNDS):
    order = list(racers) if round_ % 2 == 0 else list(racers)[::-1]  # alternate who goes first
    for label in order:
        run = mine.train(racers[label], optimizers[label], train_data, few_valid, steps=ROUND_STEPS,
                    batch_size=BATCH, eval_every=ROUND_STEPS, rng=round_, progress=False)
        rates[label].append(run.tokens_per_second)  # same rng: both models see the same batches

# %%
ratios = np.array(rates["tied"]) / np.array(rates["untied"])
load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores" if hasattr(os, "getloadavg") else ""
for label, r in rates.items():
    print(f"{label:<7} median {format_rate(float(np.median(r))):>12}   rounds from {format_rate(min(r))} "
          f"to {format_rate(max(r))}")
print(f"tied / untied speed: {np.median(ratios):.2f} (median of {ROUNDS} rounds of {ROUND_STEPS} steps; "
      f"rounds from {ratios.min():.2f} to {ratios.max():.2f}); {load}")
if ratios.min() > 1 or ratios.max() < 1:
    print(f"every round agrees: the {'tied' if ratios.min() > 1 else 'untied'} model trains faster here")
else:
    print("the rounds fall on both sides of 1: this machine was too busy to tell the two speeds apart")

# %% [markdown]
# Read the ratio, not the speeds: the last line above says whether the rounds agree. When they
# all put the tied model ahead, a plausible reason is that AdamW updates one `(V, d)` table
# instead of two; a ratio whose rounds fall on both sides of 1 says only that the machine was
# too busy to tell.

# %%
fig, (ax, zoom) = plt.subplots(1, 2, figsize=(12, 4.8))
colours = {"tied": "tab:blue", "untied": "tab:orange"}
for label, h in histories.items():
    ax.plot(h.eval_steps, h.train_loss, "--", color=colours[label], label=f"{label}: training text")
    ax.plot(h.eval_steps, h.valid_loss, "-", color=colours[label], label=f"{label}: held-out text")
    zoom.plot(h.eval_steps, h.valid_loss, "-", color=colours[label], label=f"{label}: held-out text")
ax.axhline(log_v, color="grey", ls=":", label=f"uniform guess, log V = {log_v:.2f}")
ax.axhline(unigram_valid, color="black", ls="-.", lw=1, label=f"word frequencies only ({unigram_valid:.2f})")
ax.set(xlabel="step", ylabel="cross-entropy (nats per word)",
       title=f"Tied ({n_tied:,} params) vs untied ({n_untied:,}), same budget")
ax.set_ylim(top=log_v + 0.3)
final_valid = [h.valid_loss[-1] for h in histories.values()]
zoom.set_ylim(min(final_valid) - 0.1, min(final_valid) + 0.5)
zoom.set(xlabel="step", title="Held-out loss, zoomed in")
for axis in (ax, zoom):
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
lesson.save(fig, "loss_curves.png",
            "training and held-out loss of the tied and untied models, with the uniform and "
            "word-frequency baselines; right: the held-out loss zoomed in")

# %% [markdown]
# Both curves fall from `log V` through the word-frequency line within the first few hundred
# steps: the first thing a language model learns is how common each word is. Everything
# below that line comes from reading the context.
#
# On held-out text the two models end up close, the untied one slightly ahead: at full size
# (`minigrad lesson 8 --no-pause`) the table above gives 3.796 (tied) and 3.778 (untied) at the
# last step, which for both is also the best of their evaluations.
# One seed is one draw of the initial weights and of the batch order, so next we train both
# models again from two more seeds.
#
# ## The same comparison over three seeds
#
# Seeds 1 and 2, each with its own initialisation and batch order, the same budget. We compare
# the held-out loss averaged over the last three evaluations (one evaluation moves by a few
# hundredths from one checkpoint to the next), the best held-out loss, and the gap between
# training and held-out loss.

#
# On each trained model we also measure lesson 5's near-misses. At a position with state `h`,
# the output map pushes each wrong row `i` by `p_i h`: the pushes all share the direction `h`,
# so a row's share of the total push is its share of the wrong probability `1 - p_target`. We
# add these up over every held-out position (weighted by `|h|`) and ask how much of the push
# goes to the 1, 10 and 100 wrong words given the highest probability, out of V - 1.

# %%
SEEDS = (SEED, 1, 2)
NEAR = (1, 10, 100)


def near_miss_shares(model: TinyLM, data: Windows) -> np.ndarray:
    """The share of the output map's push on wrong rows that goes to the k likeliest wrong words, per k."""
    with mg.no_grad():
        x = model.emb(data.ids).reshape(len(data), -1)
        h = model.down(model.up(x).tanh()).data.astype(np.float64)
        logits = (h @ model.head.weight.data.T).astype(np.float64)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(data)), data.targets] = 0.0  # wrong rows only
    ranked = -np.sort(np.partition(-p, max(NEAR) - 1, axis=1)[:, :max(NEAR)], axis=1)  # likeliest first
    weight = np.linalg.norm(h, axis=1)
    wrong = (weight * p.sum(axis=1)).sum()
    return np.array([(weight * ranked[:, :k].sum(axis=1)).sum() / wrong for k in NEAR])


def summary(h, model: TinyLM | None) -> dict:
    """End, best and gap of a run's held-out loss; the near-miss shares of `model` (None: skip them)."""
    return {"end": float(np.mean(h.valid_loss[-3:])), "best": float(np.min(h.valid_loss)),
            "gap": float(np.mean(h.valid_loss[-3:]) - np.mean(h.train_loss[-3:])),
            "near": None if model is None else near_miss_shares(model, valid_data)}


# %%
models_of_seed_0 = {"tied": tied_model, "untied": untied_model}
by_seed = {SEED: {label: summary(h, models_of_seed_0[label]) for label, h in histories.items()}}
for seed in SEEDS[1:]:
    by_seed[seed] = {}
    for tied in (True, False):
        label = "tied" if tied else "untied"
        model = build(tied, seed)
        h = mine.train(model, adamw(model), train_data, valid_data, steps=STEPS, batch_size=BATCH,
                       eval_every=max(1, STEPS // 10), rng=seed + 1, label=f"{label:<6} seed {seed}")
        by_seed[seed][label] = summary(h, model)

# %% [markdown]
# Same width is one comparison; same number of parameters is another. The untied model above
# has 44% more numbers than the tied one, so a better held-out loss could come from its size
# rather than from having two maps. The control: an untied TinyLM whose width is chosen so
# that its parameter count is as close as possible to the tied model's, trained with the same
# budget and seeds.

# %%
def matched_width(target: int, build_at, widths) -> int:
    """The width among `widths` whose model, built by build_at(width), has nearest `target` parameters."""
    return min(widths, key=lambda w: abs(build_at(w).num_parameters() - target))


MATCHED = matched_width(n_tied, lambda w: TinyLM(V, w, HIDDEN, CONTEXT, tied=False), range(4, WIDTH + 1))
n_matched = TinyLM(V, MATCHED, HIDDEN, CONTEXT, tied=False).num_parameters()
print(f"untied control: width {MATCHED}, {n_matched:,} parameters (tied: {n_tied:,})")
assert abs(n_matched / n_tied - 1) < 0.05 and MATCHED < WIDTH
for seed in SEEDS:
    model = build(tied=False, seed=seed, width=MATCHED)
    h = mine.train(model, adamw(model), train_data, valid_data, steps=STEPS, batch_size=BATCH,
                   eval_every=max(1, STEPS // 10), eval_from=STEPS - 2 * max(1, STEPS // 10), rng=seed + 1,
                   label=f"matched seed {seed}")  # summary() reads only the last 3 evaluations
    by_seed[seed]["matched"] = summary(h, None)

# %% [markdown]
# ### How sure: a t-interval over three seeds
#
# Three seeds give three differences, and their mean would move with three other seeds. The
# t-interval says how far: with `n` values of mean `m` and standard deviation `s`, the mean's
# standard error is `s / sqrt(n)`, and the 95% interval is `m` plus or minus `t * s / sqrt(n)`,
# where `t` comes from Student's distribution with `n - 1` degrees of freedom (4.30 for three
# seeds: wide, because `s` itself is guessed from three numbers). `t_interval` in the kit does
# it. An interval clear of zero fixes the sign; one that contains zero fixes only a size: a
# difference outside it is unlikely. The figure after the table shows each difference's three
# seeds and its interval.

# %%
ends = {label: np.array([r[label]["end"] for r in by_seed.values()])
        for label in ("tied", "untied", "matched")}
ahead = {key: [r["tied"][key] - r["untied"][key] for r in by_seed.values()] for key in ("end", "best")}
gaps = {label: [r[label]["gap"] for r in by_seed.values()] for label in ends}
print(f"held-out loss (mean of the last 3 evaluations) and train/held-out gap, {len(SEEDS)} seeds:")
for label, e in ends.items():
    print(f"{label:>8}: {e.min():.3f}-{e.max():.3f}   gap {min(gaps[label]):.2f}-{max(gaps[label]):.2f}")
same_width, same_count = ends["tied"] - ends["untied"], ends["tied"] - ends["matched"]
for what, diff in (("untied (same width) ahead of tied", same_width),
                   ("untied (same parameters) ahead of tied", same_count)):
    low, high = t_interval(diff)
    print(f"{what}: {diff.min():+.3f} to {diff.max():+.3f} nats, mean {diff.mean():+.3f} "
          f"(95% interval {low:+.3f} to {high:+.3f})")
print(f"best held-out loss, untied (same width) ahead by {min(ahead['best']):+.3f} to "
      f"{max(ahead['best']):+.3f}")

# %%
fig, ax = plt.subplots(figsize=(7, 3.6))
for x, diff in enumerate((same_width, same_count)):
    low, high = t_interval(diff)
    ax.plot(np.full(len(diff), x - 0.1), diff, "o", color="C0", label="one seed" if x == 0 else None)
    ax.errorbar(x + 0.1, diff.mean(), yerr=[[diff.mean() - low], [high - diff.mean()]], fmt="ks", capsize=6,
                label="mean, 95% t-interval" if x == 0 else None)
ax.axhline(0, color="k", lw=0.8)
ax.axhline(-0.01, color="C3", ls=":", label="a gain from tying of 0.01 nats")
ax.set_xticks([0, 1], ["untied, same width", "untied, same parameters"])
ax.set(ylabel="tied minus untied held-out loss (nats)", title="Three seeds and what they can say")
ax.legend(fontsize=8)
lesson.save(fig, "seeds_and_intervals.png",
            "each seed's difference between the tied and the untied model, and the t-interval of the mean")

# %%
# the checks are named functions in minigrad/learn/kit/verdicts.py; each returns its statements
best = {label: [r[label]["best"] for r in by_seed.values()] for label in ("tied", "untied")}
hold(tying_in_tinylm(ends, best, gaps, full_size=lesson.verdict_tested(
    "tying does not improve the held-out loss at this scale, and overfits less")))

# %%
near = np.array([[r[label]["near"] for label in ("tied", "untied")]  # (seeds, models, k)
                 for r in by_seed.values()])
print(f"share of the output map's push on wrong rows, held-out text, min-max over {len(SEEDS)} seeds "
      f"and both models: " + ", ".join(f"top {k}: {near[..., i].min():.0%}-{near[..., i].max():.0%}"
                                       for i, k in enumerate(NEAR)))
hold(near_misses_take_the_push(near, full_size=lesson.verdict_tested(
    "the 10 likeliest wrong words take most of the push (a short run spreads it)")))

# %% [markdown]
# At full size (three seeds), at the same width the untied model is ahead at the end in every
# seed, by 0.022 to 0.055 nats (mean 0.036), under 2% of the loss. Three seeds do not pin the
# mean down: its 95% interval runs from -0.007 to +0.079, so three out of three is not yet a
# sign. What the interval does bound is the size: the difference is within 0.15 nats, and a
# gain from tying of more than 0.01 nats at this width is excluded (the check asserts both).
#
# The control changes the picture. The untied model narrowed to width 36 (162,596 parameters,
# against the tied model's 160,960) is behind the tied one in every seed, by 0.030 to 0.046
# nats, and its interval, -0.057 to -0.015, stays clear of zero. So the sign flips: at equal
# width a second table helps a little, at equal parameter count tying helps a little, and
# neither gap is more than a few hundredths.
#
# The train/held-out gap: 0.82-0.83 tied, 0.98-1.01 untied at the same width, 0.72-0.77 for
# the narrow control. The tied model overfits less than the untied one of its width but more
# than the untied one of its size: its smaller gap is what 44% fewer parameters give, not a
# regularisation beyond that.

# %% [markdown]
# The near-misses: in every seed and both models the likeliest wrong word gets 27-30% of the
# output map's push on wrong rows, the 10 likeliest 63-68%, the 100 likeliest 91-93%, out of
# 1,999. So "shaped mostly by near-misses" holds for a trained model. (At the start of
# training, with every probability near `1/V`, the push is spread evenly; the small run gives
# 47-52% for the top 10.)
#
# Against the sources: the essay calls tying a form of "regularization" and says it is "close
# to free" when "the vocabulary is large relative to the model". Ours is such a model, and the
# saving does come almost free; the regularisation does not show beyond the parameter count.
# Press and Wolf, cited by the material, report that tying improves language models: at the
# same width this lesson does not reproduce that at its scale, and only against an untied
# model of the same size does tying come out ahead. Both models overfit this 100,000-word
# text; the gap grows all run long.
#
# ## A checkpoint that keeps the tie
#
# `minigrad.save` writes the state dict in the safetensors format. A tied table is one
# tensor in the file plus a record of its second name; `minigrad.load` returns a dict in
# which both names hold the same array object, and `load_state_dict` copies it into a model
# that ties the same way.

# %%
checkpoint = OUT / "tiny_lm_tied.safetensors"
mg.save(tied_model, checkpoint)
mg.save(untied_model, OUT / "tiny_lm_untied.safetensors")
print("wrote", checkpoint, "and", OUT / "tiny_lm_untied.safetensors")
print(f"file sizes: tied {checkpoint.stat().st_size:,} bytes, "
      f"untied {(OUT / 'tiny_lm_untied.safetensors').stat().st_size:,} bytes")

# %%
state = mg.load(checkpoint)
assert state["head.weight"] is state["emb.weight"], "the file stores the table once, under two names"
restored = build(tied=True, seed=SEED + 99)  # a different random start
restored.load_state_dict(state)
assert restored.head.weight is restored.emb.weight, "the reloaded model must still be tied"
before, after = mine.mean_loss_of(tied_model, valid_data), mine.mean_loss_of(restored, valid_data)
assert before == after, f"the reloaded model should give the identical loss, got {before} and {after}"
print(f"reloaded: head.weight is emb.weight; held-out loss {after:.6f} (identical)")

try:  # a tied checkpoint cannot silently become two tables
    TinyLM(V, WIDTH, HIDDEN, CONTEXT, tied=False).load_state_dict(state)
except ValueError as error:
    print("loading it into an untied model:", error)

# %% [markdown]
# ## What it learned
#
# Sampling a few words from the tied model, one at a time, each from the softmax of its
# logits (at temperature 0.8, and never `<unk>`). Do not expect prose: three words of context
# and a small table are enough for local patterns of the reference manual, not for sense.

# %%
def sample(model: TinyLM, prompt: list[str], n_words: int, temperature: float = 0.8, seed: int = 8) -> str:
    g = np.random.default_rng(seed)
    ids = list(vocab.encode(prompt))
    with mg.no_grad():
        for _ in range(n_words):
            logits = model(np.array([ids[-CONTEXT:]])).data[0] / temperature
            logits[0] = -np.inf  # never say <unk>
            p = np.exp(logits - logits.max())
            ids.append(int(g.choice(V, p=p / p.sum())))
    return " ".join(vocab.decode(ids))


print(sample(tied_model, ["the", "value", "of"], 30))

# %% [markdown]
# ## Meeting TinyGPT
#
# TinyLM reads a fixed window through one tanh layer. The models the essay has in mind are
# transformers, and from lesson 9 on we train a small one beside TinyLM:
# `minigrad.models.TinyGPT`, GPT-2's layout with nanoGPT's parameter names, so that a
# name printed here is the name you would meet in nanoGPT or in GPT-2's released weights.
#
# - `transformer.wte` is the token table (V, d), `transformer.wpe` a second table with one row
#   per position. The vector at position `t` starts as `wte[token] + wpe[t]`.
# - `transformer.h.0`, `h.1`, ...: the blocks. Each adds two things to its input, in turn. First
#   attention: `ln_1` normalises, `attn.c_attn` makes a query, a key and a value for every
#   position (one `Linear(d, 3d)`), each position takes a weighted mean of the values at
#   itself and the positions before it (never after: the mask is causal), and `attn.c_proj`
#   maps the result back. Then the MLP: `ln_2`, `mlp.c_fc` widens to `4d`, GELU, `mlp.c_proj`
#   narrows back to `d`. The additions keep a "residual stream" of width `d` running from the
#   table to the top.
# - `transformer.ln_f` normalises the top of the stream, and `lm_head` (V, d) scores every
#   token there. Tied, `lm_head.weight` *is* `transformer.wte.weight`, as in GPT-2.
#
# Because the mask is causal, one window of T tokens gives T predictions at once: position `t`
# predicts token `t + 1` from tokens `0..t`. The targets are the window shifted by one. Both
# models also name their two maps the same way, `model.input_table` and `model.output_table`,
# which is how the later lessons read them.

# %%
gpt = mine.build(TinyGPT(V, S.gpt_context, WIDTH, S.gpt_heads, S.gpt_layers, tied=False, rng=SEED), tied=True)
print(f"{'name':<30} {'shape':>12} {'numbers':>9}")
for name, parameter in gpt.named_parameters():
    print(f"{name:<30} {str(parameter.shape):>12} {parameter.size:>9,}")
print("tied names:", gpt.aliases()["transformer.wte.weight"])
print(f"TinyGPT: {gpt.num_parameters():,} numbers, {V * WIDTH / gpt.num_parameters():.0%} of them the "
      f"table; tied TinyLM: {n_tied:,}")
print(inspect.getsource(Block.forward))
assert gpt.output_table is gpt.input_table is gpt.transformer.wte.weight
assert tied_model.input_table is tied_model.output_table is tied_model.emb.weight

# %% [markdown]
# The same `train()` trains it: windows of `T` tokens with a target at every position
# (`every_position=True`), the same AdamW. We evaluate on every held-out token once (windows
# that do not overlap) and compare with TinyLM's held-out loss after as many predicted tokens:
# TinyGPT predicts `batch x T` tokens a step, TinyLM `batch`.

# %%
gpt_train, gpt_valid = split_windows(token_ids, S.gpt_context, valid_fraction=0.1, pieces=20,
                                     every_position=True)
gpt_valid = gpt_valid.subset(np.arange(0, len(gpt_valid), S.gpt_context))  # each held-out token once
with mg.no_grad():
    print("ids", gpt_train.ids[:2].shape, "-> logits", gpt(gpt_train.ids[:2]).shape, "; targets",
          gpt_train.targets[:2].shape)
gpt_history = mine.train(gpt, adamw(gpt), gpt_train, gpt_valid, steps=S.gpt_steps, batch_size=S.gpt_batch,
                         eval_every=max(1, S.gpt_steps // 10), rng=SEED + 1, label="TinyGPT")

# %%
gpt_tokens = S.gpt_steps * S.gpt_batch * S.gpt_context
lm_tokens = np.array(histories["tied"].eval_steps) * BATCH
lm_then = float(np.interp(gpt_tokens, lm_tokens, histories["tied"].valid_loss))
print(f"after {gpt_tokens:,} predicted tokens, held-out loss: TinyGPT {gpt_history.valid_loss[-1]:.3f} "
      f"(from {gpt_history.valid_loss[0]:.3f}), tied TinyLM {lm_then:.3f}; "
      f"{gpt_history.tokens_per_second / histories['tied'].tokens_per_second:.2f}x TinyLM's tokens/s")
print(f"per predicted token, {'TinyGPT' if gpt_history.valid_loss[-1] < lm_then else 'TinyLM'} is ahead "
      f"by {abs(gpt_history.valid_loss[-1] - lm_then):.2f} nats on this budget")
assert gpt_history.valid_loss[-1] < gpt_history.valid_loss[0] - 0.5, "TinyGPT learns with the same train()"
if lesson.verdict_tested("TinyGPT gets below the word-frequency line within the run"):
    assert gpt_history.valid_loss[-1] < unigram_valid

# %% [markdown]
# TinyGPT learns with the same loop. The last line says which model is ahead per predicted
# token on this budget: at full size TinyLM, by 0.67 nats (4.02 against TinyGPT's 4.68 after
# 153,600 predicted tokens), and TinyGPT trains about half as many tokens a second. It is a
# rough comparison: the two are trained with the same learning
# rate, which suits neither exactly, and TinyGPT's first positions see fewer than three words
# of context while TinyLM always sees three. Lessons 10 and 12 train TinyGPT longer and
# compare again.

# %% [markdown]
# ## Tying in TinyGPT, with the same control
#
# The tied and untied comparison again, on the transformer: TinyGPT tied (as above), untied at
# the same width, and untied at the width whose parameter count is nearest the tied one's
# (a multiple of the number of heads), three seeds each, the budget of the run above.

# %%
GPT_MATCHED = matched_width(gpt.num_parameters(), lambda w: TinyGPT(V, S.gpt_context, w, S.gpt_heads,
                            S.gpt_layers, tied=False), range(S.gpt_heads, WIDTH + 1, S.gpt_heads))
gpt_variants = {"tied": (WIDTH, True), "untied": (WIDTH, False), "matched": (GPT_MATCHED, False)}
gpt_ends = {label: [] for label in gpt_variants}  # label -> held-out loss at the end, per seed
for seed in SEEDS:
    for label, (width, tied) in gpt_variants.items():
        if seed == SEED and label == "tied":  # trained above
            gpt_ends[label].append(gpt_history.valid_loss[-1])
            continue
        model = mine.build(TinyGPT(V, S.gpt_context, width, S.gpt_heads, S.gpt_layers, tied=False, rng=seed),
                           tied)
        h = mine.train(model, adamw(model), gpt_train, gpt_valid, steps=S.gpt_steps, batch_size=S.gpt_batch,
                       eval_every=S.gpt_steps, rng=seed + 1,  # evaluated at the end only
                       label=f"TinyGPT {label} seed {seed}")
        gpt_ends[label].append(h.valid_loss[-1])
gpt_ends = {label: np.array(v) for label, v in gpt_ends.items()}
gpt_counts = {label: TinyGPT(V, S.gpt_context, w, S.gpt_heads, S.gpt_layers, tied=t).num_parameters()
              for label, (w, t) in gpt_variants.items()}
for label, e in gpt_ends.items():
    print(f"TinyGPT {label:>8} (width {gpt_variants[label][0]}, {gpt_counts[label]:,} parameters): "
          f"held-out {e.min():.3f}-{e.max():.3f}")
for other in ("untied", "matched"):
    diff = gpt_ends["tied"] - gpt_ends[other]
    low, high = t_interval(diff)
    print(f"{other} ahead of tied: {diff.min():+.3f} to {diff.max():+.3f}, 95% interval {low:+.3f} to "
          f"{high:+.3f}")

# %%
hold(tying_in_tinygpt(gpt_ends, gpt_counts, full_size=lesson.verdict_tested(
    "on TinyGPT's budget the untied models are ahead of the tied one")))

# %% [markdown]
# At full size (three seeds, 600 steps) TinyGPT does not take the tie well. The untied
# TinyGPT of the same width is ahead of the tied one in every seed, by 0.10 to 0.18 nats
# (95% interval +0.04 to +0.25), and the untied control narrowed to width 44 (225,104
# parameters against 230,144) is ahead too, in every seed, by 0.17 to 0.40 (a wide interval,
# -0.05 to +0.56). On this short budget, then, tying costs the transformer held-out loss at
# equal width, beyond the interval; at equal size it costs in each seed, though three seeds do
# not exclude zero there. TinyLM's small edge at equal size does not carry over. This is
# an early point in TinyGPT's training (its loss is still far above TinyLM's); we have not run
# the comparison to convergence, so whether the sign turns later is open.

# %% [markdown]
# ## Exercise
#
# Run `minigrad exercise 8`: it copies the stub to
# `minigrad-exercises/08_tiny_language_model.py`, in the folder you run it from (in a
# notebook, define the functions in a cell instead and run `minigrad.check(8, globals())`).
# There, write `train_step(model, optimizer, ids, targets)`, one step on one batch that returns
# the batch's mean cross-entropy before the update, and `mean_loss(model, ids, targets,
# batch_size=1024)`, the mean cross-entropy over every target, run in chunks of at most
# `batch_size` positions, leaving the model as it was. `minigrad check 8` compares every
# parameter with minigrad's step and names the usual slips (gradients never reset, a summed
# loss, a second step, an average of the chunks' averages, a graph recorded). Once yours pass,
# every model from here on trains with them.
