# %% [markdown]
# # Lesson 5: The output map
#
# The unembedding scores every token at every position, so every row of it learns at every position.
#
# ## What you will see
#
# At the top of a language model the final vector `h` (width `d`) is turned into one score per
# vocabulary entry by a second table `W` of shape `(V, d)`: the logits are `z = W h`, written
# `h W^T` for a batch, exactly `nn.Linear(d, V, bias=False)`. Softmax turns the logits into
# probabilities `p`, and the loss is cross-entropy, `-log p_c` for the correct next token `c`.
#
# - You write cross-entropy yourself, forward and backward, as a minigrad `Function`: the
#   gradient of the loss with respect to the logits is yours to derive. The lesson then runs
#   its measurements on your version.
# - Which rows of `W` receive a gradient from one position, and which row is pushed hardest:
#   the output map is trained differently from the input map of lessons 3 and 4.
# - What is sent down into the network, `dL/dh`.
# - Whether reading a token's row and scoring it with the output map gives the token back. On
#   random tables an untied output map does so only by chance; a tied table often does, by
#   geometry alone (a row scores itself highest when the rows are similar in length), which is
#   still not an inverse. Lesson 9 asks the same of trained tables, after lesson 8 has shown how
#   a language model is trained.

# %% [markdown]
# ## Predict first
#
# One position, a vocabulary of 8 tokens, the correct next token is "cat". After one backward
# pass, how many of the 8 rows of `W` have a nonzero gradient: 1, 2 or 8? And among the 7 wrong
# tokens, which row is pushed hardest: the one with the largest logit, the one whose vector is
# longest, or all equally?

# %%
import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad import whose
from minigrad.learn.course import yours
from minigrad.learn.kit import (
    every_row_every_position,
    hold,
    near_miss_pushed_hardest,
    round_trip_on_random_tables,
    setup,
)
from minigrad.nn import functional as F

lesson = setup(5)  # caps BLAS threads, draws headless, makes OUT
OUT = lesson.out
rng = np.random.default_rng(5)
size = lesson.sizes(full=dict(big_V=5000, big_d=64, round_V=1000),  # MINIGRAD_SMALL=1: small
                    small=dict(big_V=500, big_d=32, round_V=500))
big_V, big_d, round_V = size.big_V, size.big_d, size.round_V
pieces = yours(5)  # your CrossEntropy from minigrad-exercises/, if it passes `minigrad check 5`


def softmax(z: np.ndarray) -> np.ndarray:
    """Probabilities along the last axis (shifted by the max so exp never overflows)."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# %% [markdown]
# ## Build it: cross-entropy and its backward
#
# Run `minigrad exercise 5`: it copies the stub to `minigrad-exercises/05_output_map.py`, in
# the folder you run it from (in a notebook, define the class in a cell instead and run
# `minigrad.check(5, globals())`). There, write `CrossEntropy`, a minigrad `Function` with the
# signature of minigrad's own: `forward(ctx, logits, targets, reduction="mean")` returns the
# loss, the mean over positions of `-log softmax(z)[target]`, and `backward(ctx, grad)`
# returns its gradient with respect to the logits (and `None` for the targets).
#
# Derive the backward on paper first, for one position: write the loss as a function of the
# logits `z`, and differentiate it by one logit `z_i`, once for the target and once for any
# other class. Then account for the mean over positions and for `grad`. Run
# `minigrad check 5`: it compares your backward with finite differences and names the usual
# slips (a sign, a forgotten term, a missing factor, an `exp` that overflows).
#
# The line printed above says whose `CrossEntropy` this lesson runs. Once your copy passes,
# every loss below is computed by yours (`pieces.use()`), and the rule it follows is read off
# the numbers it produces.
#
# ## One position, every row
# In a notebook, `pieces = yours(5, globals())` in the setup cell marks and uses the
# definitions of your notebook instead of the file.

# %%
vocab = ["the", "cat", "sat", "on", "mat", "dog", "ran", "<eos>"]
V, d = len(vocab), 4
target = vocab.index("cat")
head = mg.nn.Linear(d, V, bias=False, dtype=np.float64, rng=0)  # head.weight is W, (V, d)
h = mg.tensor(rng.standard_normal((1, d)), requires_grad=True, name="h")

logits = head(h)  # (1, V): z_i = h . w_i
with pieces.use():
    assert (whose("CrossEntropy") == "yours") == pieces.are_yours  # else minigrad's
    loss = F.cross_entropy(logits, np.array([target]))
    print("the loss's backward node:", loss.grad_fn.name)  # named while it runs
    loss.backward()

# %%
W = head.weight.data
p = softmax(logits.data[0])
y = np.eye(V)[target]
for token, prob, row_grad in zip(vocab, p, head.weight.grad):
    print(f"{token:>6}  p = {prob:.3f}   dL/dw = {np.array2string(row_grad, precision=3)}")

# the rule, row by row: dL/dw_i = (p_i - y_i) h
assert np.allclose(head.weight.grad, np.outer(p - y, h.data[0])), "dL/dW should be (p - y) h^T"
rows_touched = int(np.sum(np.any(head.weight.grad != 0, axis=1)))
assert rows_touched == V, f"every row should get a gradient, got {rows_touched} of {V}"
# the target row is pulled toward h, every other row is pushed away from it (a step goes along -grad)
step = -head.weight.grad
assert step[target] @ h.data[0] > 0 and all(step[i] @ h.data[0] < 0 for i in range(V) if i != target)
print(f"rows with a nonzero gradient: {rows_touched} of {V}; loss = {loss.item():.4f}")

# %% [markdown]
# All 8 rows move. The target's row gets `(p_c - 1) h`, a negative multiple of `h`, so a step
# against the gradient moves `w_c` toward `h` and raises its logit next time. Every other row
# gets `p_i h` and moves away from `h`. The sizes differ only by the factor `p_i`, so the answer
# to the second prediction is: the wrong token with the largest logit ("dog" here, p = 0.30), and
# the lengths of the rows play no part.
#
# ## Every position, every row
#
# One position is not a pattern. Take 12 positions, each with its own `h` and its own target,
# run a separate backward for each, and count which rows of each table received a gradient. For
# contrast, the input side: an embedding table read at 12 positions.

# %%
positions = 12
H = rng.standard_normal((positions, d))
targets = rng.integers(0, V, positions)
input_ids = rng.integers(0, V, positions)
embedding = mg.nn.Embedding(V, d, dtype=np.float64, rng=1)

touched_out = np.zeros((positions, V), dtype=bool)
touched_in = np.zeros((positions, V), dtype=bool)
for n in range(positions):
    head.zero_grad()
    with pieces.use():
        F.cross_entropy(head(mg.tensor(H[n : n + 1])), targets[n : n + 1]).backward()
    touched_out[n] = np.any(head.weight.grad != 0, axis=1)
    embedding.zero_grad()
    embedding(input_ids[n : n + 1]).sum().backward()
    touched_in[n] = np.any(embedding.weight.grad.to_dense() != 0, axis=1)

# %%
print("output map: rows touched per position:", touched_out.sum(axis=1))
print("input map:  rows touched per position:", touched_in.sum(axis=1))
# the verdict checks are named functions in minigrad/learn/kit/verdicts.py; hold() fails naming
# every statement that does not hold
hold(every_row_every_position(touched_out, touched_in))

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharey=True)
for ax, touched, title in [(axes[0], touched_in, "input map E (lookup)"),
                           (axes[1], touched_out, "output map W (logits)")]:
    ax.imshow(touched, cmap="Greys", vmin=0, vmax=1, aspect="auto")
    ax.set_title(f"{title}: {touched.sum()} of {touched.size} cells", fontsize=10)
    ax.set_xticks(range(V), vocab, rotation=60, fontsize=8)
axes[0].set_ylabel("position")
fig.suptitle("Which rows get a gradient at each position (black = nonzero)")
lesson.save(fig, "rows_touched_per_position.png",
            "which rows get a gradient at each position: a few for the input map, every row for the "
            "output map")

# %% [markdown]
# ## The near-miss is pushed hardest
#
# For a wrong token the push has length `|dL/dw_i| = p_i |h|`: proportional to its probability.
# With a bigger vocabulary the probabilities spread over several orders of magnitude, so we can
# see the whole range. We let the correct token be the one the model already ranks first, so
# the near-miss is the runner-up. The lengths are measured from the backward (yours, once it
# passes), not computed from the formula.

# %%
big_head = mg.nn.Linear(big_d, big_V, bias=False, dtype=np.float64, rng=2)
with mg.no_grad():
    big_head.weight.mul_(3.0)  # wider logits, so the probabilities span many decades
h_big = mg.tensor(rng.standard_normal((1, big_d)))
big_logits = big_head(h_big)
p_big = softmax(big_logits.data[0])
big_target = int(np.argmax(p_big))  # the model is right, but not sure: a runner-up is close behind
with pieces.use():
    F.cross_entropy(big_logits, np.array([big_target])).backward()
push = np.linalg.norm(big_head.weight.grad, axis=1)
wrong = np.arange(big_V) != big_target

# %%
near_miss = int(np.argmax(np.where(wrong, p_big, -1)))
print(f"target: p = {p_big[big_target]:.3f}, pull = {push[big_target]:.4f}")
print(f"near-miss (token {near_miss}): p = {p_big[near_miss]:.3f}, push = {push[near_miss]:.4f}")
print(f"least likely wrong token: p = {p_big[wrong].min():.2e}, push = {push[wrong].min():.2e}")
hold(near_miss_pushed_hardest(p_big, push, big_target))
assert np.allclose(push[wrong] / p_big[wrong], np.linalg.norm(h_big.data)), "push / p_i = |h| for wrong rows"
assert np.isclose(push[big_target], (1 - p_big[big_target]) * np.linalg.norm(h_big.data))
# the wrong tokens' probabilities add up to 1 - p_c, so all the pushes together equal the one pull
assert np.isclose(push[wrong].sum(), push[big_target])
print(f"sum of all pushes = {push[wrong].sum():.4f} = the pull on the target")

# %%
fig, ax = plt.subplots(figsize=(6.5, 4.5))
ax.loglog(p_big[wrong], push[wrong], ".", ms=3, alpha=0.5, label="wrong tokens: push away from h")
ax.loglog(p_big[big_target], push[big_target], "r*", ms=12, label="target: pull toward h, (1 - p_c)|h|")
ax.loglog(p_big[near_miss], push[near_miss], "ko", mfc="none", ms=10, label="near-miss")
ax.set(xlabel="probability p_i given to the token", ylabel="|dL/dw_i| (from backward)",
       title=f"Push versus probability, V = {big_V:,}: a straight line of slope 1")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
lesson.save(fig, "push_vs_probability.png",
            "each token's output-row push against its probability: a straight line of slope 1, and "
            "the target pulled the other way")

# %% [markdown]
# ## What flows down: dL/dh
#
# The same numbers `p_i - y_i`, gathered across the vocabulary, form the gradient sent down to
# the network below: `dL/dh = sum_i (p_i - y_i) w_i = W^T (p - y)`. Read it as an instruction:
# point more like the target's row, and less like each tempting wrong row, in proportion to
# how tempting it was. We compare it with the `h.grad` that backward computed in the first cell.

# %%
toward_target = (1 - p[target]) * W[target]
away_from_others = sum(p[i] * W[i] for i in range(V) if i != target)
by_formula = away_from_others - toward_target
assert np.allclose(h.grad[0], by_formula), "dL/dh should be sum_i (p_i - y_i) w_i"
assert np.allclose(h.grad[0], W.T @ (p - y))
print("dL/dh from backward:", h.grad[0])
print("sum_i (p_i - y_i) w_i:", by_formula)

# %% [markdown]
# ## Check against finite differences
#
# A batch of positions with the mean loss, checked with respect to both `W` and `H`.

# %%
W_check = mg.tensor(rng.standard_normal((V, d)), requires_grad=True, name="W")
H_check = mg.tensor(rng.standard_normal((5, d)), requires_grad=True, name="H")
check_targets = np.array([1, 0, 1, 7, 3])
with pieces.use():
    print(mg.gradcheck(lambda w, hs: F.cross_entropy(F.linear(hs, w), check_targets), [W_check, H_check]))

# %% [markdown]
# ## Unembedding is not the inverse of embedding
#
# With tied weights the same table `E` serves both maps: read token `t` as `E[t]`, and score
# candidates with `E[t] @ E^T`. It is tempting to think the second step undoes the first, so
# that the top score always goes back to `t`. It does not have to, for three reasons we measure:
#
# 1. The round trip `one-hot -> E[t] -> E[t] @ E^T` is the `V x V` matrix `E E^T`, whose rank is
#    at most `d`. With `d < V` it cannot be the identity.
# 2. Whether `t` still wins depends on geometry. Token `t` scores `|e_t|^2` against itself and
#    `e_t . e_j` against token `j`. With random rows in a narrow space the dot products with
#    other rows are often larger; with rows of unequal length (trained tables have them: common
#    tokens tend to have different norms from rare ones), a long row can outscore `t` itself.
# 3. With an untied output map `W` learned separately, `E[t] @ W^T` has no reason to favour `t`.
#
# We measure, for random tables with V = 1,000 (500 with `MINIGRAD_SMALL=1`), how often the
# argmax returns `t`, as `d` grows.

# %%
widths = [2, 4, 8, 16, 32, 64, 128, 256]


def recovered_fraction(read: np.ndarray, score: np.ndarray) -> float:
    """Share of tokens t for which argmax of read[t] @ score^T is t itself."""
    return float(np.mean(np.argmax(read @ score.T, axis=1) == np.arange(read.shape[0])))


def round_trip_shares(width: int, length_spread: float = 0.5) -> tuple[float, float, float]:
    """At one width, the share of tokens given back: (a tied random table, the same table with rows
    of unequal length, an untied output map drawn apart from it). The lengths are log-normal with
    spread `length_spread` (0.5: row norms spread by about +-65%; 0: all the same)."""
    E_round = rng.standard_normal((round_V, width))
    lengths = np.exp(rng.normal(0.0, length_spread, (round_V, 1)))
    uneven = E_round * lengths
    return (recovered_fraction(E_round, E_round), recovered_fraction(uneven, uneven),
            recovered_fraction(E_round, rng.standard_normal((round_V, width))))


# %%
tied, tied_uneven, untied = np.array([round_trip_shares(width) for width in widths]).T

print(f"{'d':>5} {'tied':>6} {'tied, uneven rows':>18} {'untied':>7}")
for row in zip(widths, tied, tied_uneven, untied):
    print(f"{row[0]:>5} {row[1]:>6.3f} {row[2]:>18.3f} {row[3]:>7.3f}")

E_rank = rng.standard_normal((round_V, 64))
rank = np.linalg.matrix_rank(E_rank @ E_rank.T)
print(f"rank of E E^T for V={round_V}, d=64: {rank} (the identity would need {round_V})")

# %%
fig, ax = plt.subplots(figsize=(6.5, 4.3))
ax.semilogx(widths, tied, "o-", base=2, label="tied: argmax E[t] E^T")
ax.semilogx(widths, tied_uneven, "s-", base=2, label="tied, rows of unequal length")
ax.semilogx(widths, untied, "^-", base=2, label="untied: argmax E[t] W^T")
ax.axhline(1 / round_V, color="grey", ls=":", label="chance, 1/V")
ax.set(xlabel="width d", ylabel="fraction of tokens whose top score is themselves",
       title=f"Does unembedding give back the token? V = {round_V:,}, random tables")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
lesson.save(fig, "unembedding_is_not_inverse.png",
            "how often a token's top score is itself when its row is read back through the output "
            "map, against the width d")

# %%
assert rank == 64 < round_V, "E E^T has rank d, so it is not the identity"
hold(round_trip_on_random_tables(widths, tied, tied_uneven, untied, round_V))

# %% [markdown]
# The tied round trip works only when the space is wide and the rows are of similar length:
# then random rows are nearly perpendicular, `|e_t|^2` towers over every `e_t . e_j`, and `t`
# wins. That is a property of random geometry, not of inversion, and it fades as soon as the
# row lengths differ. The untied map stays at chance. What makes a trained output map put the
# right token on top is the gradient from this lesson, `(p_i - y_i) h`, applied at every row
# and every position: it scores every candidate against the current state and lets the loss
# decide. Whether training builds an inverse where one is possible is lesson 9's question.

# %% [markdown]
# ## Your CrossEntropy, looking back
#
# Every gradient in the first half of this lesson, the rule `(p_i - y_i) h` read off them, the
# push against probability on 5,000 rows (500 with `MINIGRAD_SMALL=1`) and the gradcheck came
# from the `CrossEntropy` named at the top: yours, once your copy passed `minigrad check 5`.
# The rule you derived for the logits, `dL/dz = (p - y) / N`, is all of it: the output map's
# gradients are that vector times `h`, and what flows down is that vector times `W`.
