# %% [markdown]
# # Lesson 2: Checking with finite differences
#
# Nudging an input and watching the output gives an estimate of the derivative that needs no
# calculus at all; this lesson measures how good that estimate is, and how minigrad uses it.
#
# ## What you will see
#
# - Three ways to turn a nudge into a slope: forward, backward and central differences.
# - A plot of their error against the size of the nudge, eps, in float32 and in float64. Two
#   sources of error pull in opposite directions, and the best eps sits where they cross.
# - The best eps you measure, set next to the value theory predicts.
# - `minigrad.tools.gradcheck` in its two modes, full (every element) and along a few random
#   directions (`directions=4`), timed as the input grows.
# - The central difference itself, which you write (`minigrad check 2` marks it): once it
#   passes, the lesson's full gradchecks run on yours.

# %% [markdown]
# ## Three difference quotients
#
# For a function f of one number and a small step eps:
#
#     forward:   (f(x + eps) - f(x)) / eps
#     backward:  (f(x) - f(x - eps)) / eps
#     central:   (f(x + eps) - f(x - eps)) / (2 eps)
#
# **Truncation error.** Expand f around x: f(x ± eps) = f ± eps f' + eps²/2 f'' ± eps³/6 f''' + ...
# Put that into the forward quotient and it returns f' + eps/2 f'' + ...: it is wrong by a
# term proportional to eps. The backward quotient has the same term with the other sign. In
# the central quotient the two f'' terms cancel, and the first term left over is eps²/6 f''':
# halve eps and the error drops four times, not two.
#
# **Rounding error.** Floating-point numbers carry about as many significant digits as their
# machine epsilon u allows: u = 2⁻²³ ≈ 1.2e-7 in float32 and u = 2⁻⁵² ≈ 2.2e-16 in float64.
# Every computed value of f is off by something like u·|f|. Subtracting two nearly equal values
# of f keeps that absolute error while the difference itself shrinks with eps, and dividing by
# eps then blows it up: this part of the error grows like u/eps.
#
# One error falls as eps shrinks, the other rises, so each method has a best eps where they
# are about equal:
#
# - forward or backward: eps ≈ u/eps gives eps* ≈ √u, with an error of about √u;
# - central: eps² ≈ u/eps gives eps* ≈ ∛u, with an error of about u^(2/3).

# %% [markdown]
# ## Your prediction
#
# Next we estimate the derivative of f(x) = tanh(x)·exp(x/2) at 200 points, with every method,
# for eps from 1e-14 to 1, in both precisions, and keep the median relative error at each eps.
# The exact derivative comes from minigrad's backward in float64.
#
# Write down your guesses before you run it. In float64, which eps gives central differences
# their smallest error: 1e-12, 1e-6 or 1e-2? About how small is that error? And is the best
# eps for float32 larger or smaller than for float64?

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn.course import yours
from minigrad.learn.kit import setup

lesson = setup(2)  # caps BLAS threads, draws headless, makes OUT
OUT = lesson.out
size = lesson.sizes(full=dict(widths=[16, 32, 64, 100, 150]), small=dict(widths=[16, 32, 64]))  # one place


def f(x: mg.Tensor) -> mg.Tensor:
    """Elementwise, so the slope at each of the points can be estimated at the same time."""
    return x.tanh() * (x * 0.5).exp()


points = np.random.default_rng(0).uniform(-1.5, 1.5, size=200)
leaf = mg.tensor(points, requires_grad=True)
f(leaf).sum().backward()
exact = leaf.grad  # f'(x) at every point, from the engine, in float64

# %%
steps = np.logspace(-14, 0, 57)
METHODS = ("forward", "backward", "central")


def median_errors(dtype: type) -> dict[str, np.ndarray]:
    """Median over the points of |estimate - f'| / |f'|, for every method and every eps."""
    x = points.astype(dtype)
    at_x = f(mg.tensor(x)).data
    errors = {method: [] for method in METHODS}
    for step in steps:
        eps = dtype(step)  # the nudge is made in the same precision as the arithmetic
        above, below = f(mg.tensor(x + eps)).data, f(mg.tensor(x - eps)).data
        estimates = {
            "forward": (above - at_x) / eps,
            "backward": (at_x - below) / eps,
            "central": (above - below) / (2 * eps),
        }
        for method, estimate in estimates.items():
            relative = np.abs(estimate.astype(np.float64) - exact) / np.abs(exact)
            errors[method].append(np.median(relative))
    return {method: np.array(values) for method, values in errors.items()}


errors = {dtype: median_errors(dtype) for dtype in (np.float32, np.float64)}

print(f"{'dtype':8} {'method':9} {'best eps':>9} {'error there':>12} {'theory eps*':>12}")
best = {}
for dtype, by_method in errors.items():
    u = np.finfo(dtype).eps
    for method, errs in by_method.items():
        i = int(np.argmin(errs))
        best[dtype, method] = (steps[i], errs[i])
        theory = np.cbrt(u) if method == "central" else np.sqrt(u)
        print(f"{dtype.__name__:8} {method:9} {steps[i]:9.1e} {errs[i]:12.1e} {theory:12.1e}")

# %% [markdown]
# ## The picture
#
# On log-log axes each error source is a straight line. The right-hand side of each curve is
# truncation: slope 1 for the one-sided quotients, slope 2 for the central one. The left-hand
# side is rounding: slope -1 whatever the method, because it is u/eps. The dotted vertical
# lines mark the theoretical best eps, √u and ∛u.
#
# In float32 the left side ends in a flat line at 100% error. Below about 1e-7 the nudge is
# smaller than the gap between neighbouring float32 numbers near x, so x + eps rounds back to
# x, both evaluations agree, and every method returns a slope of exactly 0.

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
for ax, (dtype, by_method) in zip(axes, errors.items()):
    u = np.finfo(dtype).eps
    for method, errs in by_method.items():
        ax.loglog(steps, errs, marker=".", label=method)
    ax.axvline(np.sqrt(u), color="gray", linestyle=":", label="√u (one-sided best)")
    ax.axvline(np.cbrt(u), color="black", linestyle=":", label="∛u (central best)")
    ax.set_title(f"{dtype.__name__}: u = {u:.1e}")
    ax.set_xlabel("eps")
    ax.grid(True, which="major", alpha=0.3)
axes[0].set_ylabel("median relative error of f'(x)")
axes[1].legend(loc="lower left", fontsize=8)
fig.suptitle("Finite differences: truncation (right) against rounding (left)")
lesson.save(fig, "error-vs-eps.png",
            "relative error of each finite difference against eps, float32 and float64: rounding "
            "error falls to the right, truncation error rises, central is lowest", dpi=120)

# %% [markdown]
# ## Checking the picture against the theory
#
# The slopes can be measured on the truncation side (eps between 0.01 and 0.1), and the best
# eps compared with √u and ∛u. "Agrees" below means within a factor of 10: the theory drops
# constants such as |f|/|f'''|, which depend on the function.

# %%
truncation = (steps >= 1e-2) & (steps <= 1e-1)
for dtype, by_method in errors.items():
    u = np.finfo(dtype).eps
    for method, errs in by_method.items():
        slope = np.polyfit(np.log10(steps[truncation]), np.log10(errs[truncation]), 1)[0]
        order = 2 if method == "central" else 1
        print(f"{dtype.__name__} {method:9}: truncation slope {slope:.2f} (theory {order})")
        assert abs(slope - order) < 0.2, f"{method} in {dtype.__name__}: slope {slope:.2f}, expected {order}"
        best_eps, best_error = best[dtype, method]
        theory = np.cbrt(u) if method == "central" else np.sqrt(u)
        assert theory / 10 < best_eps < theory * 10, (
            f"{method} in {dtype.__name__}: best eps {best_eps:.1e} is far from the theory's {theory:.1e}"
        )
    central, forward = best[dtype, "central"][1], best[dtype, "forward"][1]
    print(f"{dtype.__name__}: at their best eps, central is {forward / central:.0f} times more accurate "
          f"than forward ({central:.1e} against {forward:.1e}; theory u^(2/3) = {u ** (2 / 3):.1e})")
    assert central * 10 < forward, "central differences should beat forward differences by far"

# %% [markdown]
# Two things to take away.
#
# 1. In float64 the best central eps is near ∛u ≈ 6e-6, and the error there is around 1e-11;
#    that is why `minigrad.tools.gradcheck` uses central differences with eps = 1e-6.
# 2. In float32 even the best central estimate is only good to about 1e-5 relative, which is
#    the size of the tolerance a check would need. A mistake in a backward that is smaller
#    than that would pass unseen. So gradcheck always works on float64 copies of the inputs
#    (it warns when you hand it float32).

# %% [markdown]
# ## Build it: the central difference
#
# Run `minigrad exercise 2`: it copies the stub to `minigrad-exercises/02_finite_differences.py`,
# in the folder you run it from (in a notebook, define the function in a cell instead and run
# `minigrad.check(2, globals())`). There, write `central_difference(f, x, eps)`: `f` is a
# function of an array that returns a float, `x` an array of any shape, and the answer is the
# estimated gradient, shaped like `x`, from two evaluations of `f` per element. Nudge one
# element at a time and leave `x` exactly as you found it. Then run `minigrad check 2`: it
# compares your answer with gradients known exactly and names the usual slips (a forward
# difference, a divisor of eps instead of 2·eps, an `x` not put back) by their fingerprints.
#
# The line printed below says whose central difference this lesson runs: yours once your copy
# passes, else minigrad's own. Every full gradcheck from here on uses it
# (`mg.gradcheck(..., differences=central)`). In a notebook, `pieces = yours(2, globals())`
# marks the definitions of your notebook instead of the file.

# %%
pieces = yours(2)  # your central_difference from minigrad-exercises/, if it passes `minigrad check 2`
central = pieces.get("central_difference")  # else minigrad's own (minigrad.tools.gradcheck)

# %% [markdown]
# ## Full versus random-direction gradcheck
#
# `mg.gradcheck(fn, inputs)` reduces the output of `fn` to one number L (a fixed random
# weighting of its elements), takes the engine's gradient of L, and compares it with central
# differences. The **full** mode nudges every element of every input: two evaluations of `fn`
# per element, so checking a 150 × 150 weight costs 45,000 forward passes.
#
# The **random-direction** mode (`directions=k`) picks k random directions u and compares one
# number per direction:
# (L(x + eps·u) − L(x − eps·u)) / (2 eps) against the dot product of the analytical gradient
# with u. That is two evaluations per direction, whatever the size of x. A wrong gradient
# entry shows up in every random direction (it would have to be hit by an exactly zero weight
# to hide), so a handful of directions is enough to detect a mistake. When the random-direction
# check fails, gradcheck runs the full one to name the worst element.
#
# We count the forward passes each mode makes and time both on a growing weight matrix.

# %%
rng = np.random.default_rng(1)
batch = rng.normal(size=(8, 150))
calls = {"count": 0}


def layer(weight: mg.Tensor) -> mg.Tensor:
    """A tanh layer on a fixed batch; counts how often the checker runs it."""
    calls["count"] += 1
    n = weight.shape[0]
    return ((mg.tensor(batch[:, :n]) @ weight).tanh() ** 2).mean()


# %%
sizes = size.widths
timings = {"full": [], "directions": []}
for n in sizes:
    weight = mg.tensor(rng.normal(size=(n, n)) / np.sqrt(n), requires_grad=True, name="W")
    for mode in ("full", "directions"):
        calls["count"] = 0
        start = time.perf_counter()
        report = mg.gradcheck(layer, [weight], directions=4 if mode == "directions" else None,
                              differences=central)
        timings[mode].append(time.perf_counter() - start)
        assert report.ok
        # one call for the backward, then two per element (full) or per direction (4 directions)
        expected_calls = 1 + (2 * n * n if mode == "full" else 2 * 4)
        assert calls["count"] == expected_calls, (mode, calls["count"], expected_calls)
    print(f"W {n:3d} x {n:<3d} ({n * n:6d} elements): full {timings['full'][-1]:7.3f} s, "
          f"directions {timings['directions'][-1]:7.4f} s")
speedup = timings["full"][-1] / timings["directions"][-1]
print(f"at {sizes[-1] * sizes[-1]} elements the random-direction check is {speedup:.0f} times quicker")

# %%
fig, ax = plt.subplots(figsize=(6, 4))
elements = np.array(sizes) ** 2
for mode, seconds in timings.items():
    ax.loglog(elements, seconds, marker="o", label=f"{mode} gradcheck")
ax.set_xlabel("elements in W")
ax.set_ylabel("seconds")
ax.set_title("gradcheck cost: per element (full) or per direction (directions)")
ax.grid(True, alpha=0.3)
ax.legend()
lesson.save(fig, "gradcheck-time.png",
            "seconds per gradcheck against the number of elements: full grows with the size, random "
            "directions stay nearly flat", dpi=120)

# %% [markdown]
# ## How small a mistake does each mode see?
#
# Below is a tanh whose backward is right everywhere except at one element of a 6 × 8 input,
# where it is too large by a chosen factor. For each factor we run the random-direction check with 20
# different random seeds (that is, 20 different sets of directions) and count how often it
# fails, as it should; and we run the full check once.
#
# The tolerance of both modes is relative to the number being compared. In full mode that is
# the single element's slope; along a random direction it is the slope along it, a sum over all
# 48 elements, so one element's error has to be large enough to stand out against the whole
# sum.

# %%
BROKEN = (3, 5)


def tanh_with_one_wrong_entry(factor: float) -> type:
    class AlmostTanh(mg.Function):
        @staticmethod
        def forward(ctx, a):
            out = np.tanh(a)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):  # d tanh = G (1 - tanh²), but one element scaled by `factor`
            (out,) = ctx.saved
            local = 1 - out * out
            local[BROKEN] *= factor
            return grad * local

    return AlmostTanh


# %%
x = mg.tensor(np.random.default_rng(3).normal(size=(6, 8)), requires_grad=True, name="x")
caught = {}
for factor in (1.001, 1.01, 1.1):
    op = tanh_with_one_wrong_entry(factor)
    direction_failures = sum(
        not mg.gradcheck(op.apply, [x], directions=4, seed=seed, raise_exception=False, differences=central)
        for seed in range(20)
    )
    full = mg.gradcheck(op.apply, [x], raise_exception=False, differences=central)
    caught[factor] = (direction_failures, not full.ok)
    print(f"entry {BROKEN} off by {100 * (factor - 1):4.1f}%: random directions caught it "
          f"{direction_failures:2d}/20 times, full check {'caught it' if not full.ok else 'missed it'}")

# %%
assert caught[1.1] == (20, True), "a 10% error in one entry must be caught by both modes"
assert caught[1.01][1], "the full check must catch a 1% error in one entry"

report = mg.gradcheck(tanh_with_one_wrong_entry(1.1).apply, [x], directions=4, raise_exception=False,
                      differences=central)
print(report)
assert report.inputs[0].worst_index == BROKEN
print(mg.gradcheck(lambda t: t.tanh(), [x], directions=4, differences=central))

# %% [markdown]
# A 0.1% error slips past both modes: it is below the default relative tolerance,
# rtol = 1e-3. Tighten `rtol` if you need to see errors that small.
#
# The random-direction check is a cheap first test, strong against mistakes that touch many elements (a
# wrong formula, a missing term), weaker against a small error in one element of a large
# input. The full check is the final word; on a large input, run it on a small slice or a
# smaller instance of the same op.

# %% [markdown]
# ## What the full checks ran on
#
# Every full gradcheck above estimated its gradients with the central difference named at the
# top of the section that built it: yours, once your copy of the exercise passed `minigrad
# check 2`. To write it or change it: `minigrad exercise 2`, then `minigrad check 2` (or
# `minigrad check 2 --file my_copy.py`; in a notebook, `minigrad.check(2, globals())`), then
# run this lesson again.
