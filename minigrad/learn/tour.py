"""`minigrad tour`: the vocabulary bridge audit, untied then tied, on minigrad autograd.

A six-token vocabulary and a width of four. The model reads "cat", adds a small context vector,
scores every token of the vocabulary, and the loss asks for "cat" again: so the "cat" row is
read (a lookup) and said (a classifier score) in the same step. Untied, those two gradients land
in two different tensors; tied (`head.weight = emb.weight`), they meet in one row, and the ledger
shows how much each path gave. The figures are those of the numpy demo on the concept page we
teach from, "Embedding, Unembedding, and Weight Tying" (same random seed, shapes and context
vector).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from minigrad import nn
from minigrad.engine import Tensor, to_dense
from minigrad.learn.extras import install_hint, missing_modules
from minigrad.nn import functional as F
from minigrad.tools.gradcheck import gradcheck
from minigrad.tools.install_hint import source_checkout
from minigrad.tools.ledger import Ledger, ledger
from minigrad.tools.viz import GraphvizNotFoundError, draw, render, which_renderer

VOCAB = ("the", "cat", "sat", "on", "mat", "<eos>")
WIDTH = 4
SENTENCE = np.array([[0, 1, 2, 3]])  # "the cat sat on"
READ_POSITION = 1  # the model reads "cat" ...
TARGET = 1  # ... and the loss asks it to say "cat"
CAT = 1
CONTEXT = np.array([0.05, -0.03, 0.02, 0.04])  # what the rest of the network added to h
SEED = 7


@dataclass
class BridgeWeights:
    """The material's demo's starting point: E (V, d), W_U (d, V), both N(0, 0.2^2)."""

    E: np.ndarray
    W_U: np.ndarray


def seed_weights(seed: int = SEED, vocab_size: int = len(VOCAB), width: int = WIDTH) -> BridgeWeights:
    """Drawn in the material's demo's order: first the embedding table, then the untied classifier.

    The lab draws other sizes the same way; the defaults give the material's demo's (6, 4) tables."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(vocab_size, width)) * 0.2
    W_U = rng.normal(size=(width, vocab_size)) * 0.2
    return BridgeWeights(E, W_U)


def bridge_loss(E: Tensor, W: Tensor, ids: np.ndarray = SENTENCE, *, position: int = READ_POSITION,
                target: int = TARGET, context: np.ndarray = CONTEXT) -> Tensor:
    """Read the token at `position`, add the context, score the vocabulary, ask for `target`.

    E: (V, d) embedding table; W: (V, d) classifier weight (PyTorch's Linear layout, = W_U^T).
    h = E[ids[:, pos]] + context: (1, d);  logits = h W^T: (1, V);  loss = CE(logits, target).
    The keywords default to the tour's sentence; the lab passes the learner's choices.
    """
    h = F.embedding(ids[:, position], E) + context
    logits = F.linear(h, W)
    return F.cross_entropy(logits, np.full(ids.shape[0], target))


class Bridge(nn.Module):
    """The two maps of the vocabulary: `emb` reads a row, `head` scores every row."""

    def __init__(self, weights: BridgeWeights, tied: bool):
        super().__init__()
        vocab_size, width = weights.E.shape
        self.emb = nn.Embedding(vocab_size, width, sparse=True, dtype=np.float64)
        self.head = nn.Linear(width, vocab_size, bias=False, dtype=np.float64)
        self.emb.weight = nn.Parameter(weights.E)
        # W_U is (d, V); Linear keeps (out, in) = (V, d), so the classifier's weight is W_U^T
        self.head.weight = self.emb.weight if tied else nn.Parameter(np.ascontiguousarray(weights.W_U.T))

    def forward(self, ids: np.ndarray = SENTENCE) -> Tensor:
        return bridge_loss(self.emb.weight, self.head.weight, ids)


@dataclass
class ModeResult:
    """One run (untied or tied): the model, its loss (graph kept for drawing) and its ledger."""

    mode: str
    model: Bridge
    loss: Tensor
    ledger: Ledger
    svg: Path | None = None  # None when it could not be rendered


class Stopped(Exception):
    """The learner typed q at a pause or a prediction."""


def run(out_dir: str | Path = "minigrad-out", interactive: bool = False,
        stdout: TextIO | None = None, ask: Callable[[str], str] | None = None) -> int:
    """Run the tour; return 0 when every check passed and both drawings rendered, else 1.

    interactive: ask for predictions and wait for Enter between steps (a terminal's stdin).
    """
    say = _printer(stdout or sys.stdout)
    ask = ask or input
    try:
        return _tour(Path(out_dir), interactive, ask, say)
    except Stopped:
        say("Tour stopped at your request.")
        return 0


def _pause(interactive: bool, ask: Callable[[str], str], next_step: str, say: Callable[[str], None]) -> None:
    """On a terminal, wait for Enter before the next step; q (or Ctrl-D) stops the tour."""
    if not interactive:
        return
    try:
        reply = ask(f"[press Enter for {next_step}; q quits] ")
    except EOFError:  # Ctrl-D: the prompt's line is still open, so end it first
        say("")
        raise Stopped from None
    if reply.strip().lower() in {"q", "quit"}:
        raise Stopped


def _tour(out_dir: Path, interactive: bool, ask: Callable[[str], str], say: Callable[[str], None]) -> int:
    weights = seed_weights()

    say("minigrad tour: the vocabulary bridge audit")
    say("=" * 42)
    say(f"Vocabulary (V={len(VOCAB)}): {' '.join(VOCAB)}; embedding width d={WIDTH}.")
    say('The model reads "cat" from "the cat sat on", adds a small context vector, and scores')
    say('every token; the loss asks for "cat" again. So the "cat" row is both read and said.')
    say("This is the numpy demo of the concept page this course teaches from, \"Embedding,")
    say('Unembedding, and Weight Tying" (with an essay on how embeddings learn, the two texts the')
    say('course calls "the material"): the same seed, shapes and context vector, on minigrad autograd.')

    say("")
    say("Step 1. Untied: emb.weight (6, 4) is read by row; head.weight (6, 4) scores each token.")
    untied = _audit("untied", weights, out_dir, interactive, ask, say)
    _pause(interactive, ask, "step 3, the tied model", say)
    say("")
    say("Step 3. Tied: `head.weight = emb.weight`, so one (6, 4) table plays both parts.")
    tied = _audit("tied", weights, out_dir, interactive, ask, say)
    _why_the_lookup_changed(untied, tied, say)

    _pause(interactive, ask, "step 4, the checks", say)
    say("")
    say("Step 4. Checks: the gradient of the full loss against central finite differences in")
    say("  float64 (pass when |numerical - analytical| <= 1e-5 + 1e-3 |numerical|):")
    checks_ok = all([_check(r, say) for r in (untied, tied)])
    say("  The three numbers the material's demo prints, under its own labels, recomputed by minigrad:")
    say(f'    "untied cat lookup grad norm"      {_cat_norm(untied, "emb.weight"):.4f}')
    say(f'    "untied cat classifier grad norm"  {_cat_norm(untied, "head.weight"):.4f}')
    say(f'    "tied cat shared-row grad norm"    {_cat_norm(tied, "emb.weight"):.4f}')

    _pause(interactive, ask, "step 5, the drawings", say)
    say("")
    renderer = {"dot": "the system Graphviz", "wasm": "the WebAssembly Graphviz"}.get(which_renderer() or "")
    say(f"Step 5. Drawings of the backward graph (rendered with {renderer or 'nothing'}):")
    rendered = True
    for r in (untied, tied):
        rendered &= r.svg is not None
        if r.svg is not None:
            say(f"  {r.svg}  (DOT source: {r.svg.with_suffix('.dot')})")
    if tied.svg is not None:
        say(f"  In {tied.svg.name} the one parameter node has two incoming edges: the lookup's sparse row")
        say("  and the classifier's dense table. Each label gives the whole table's norm and row")
        say(f"  {CAT} ({VOCAB[CAT]})'s, the number the ledger printed.")
    say("")
    if checks_ok and rendered:
        say("All checks passed.")
    else:
        say("Some checks FAILED (see above)." if not checks_ok else "The drawings could not be rendered.")
    _next_steps(untied, tied, say)
    return 0 if checks_ok and rendered else 1


def _next_steps(untied: ModeResult, tied: ModeResult, say: Callable[[str], None]) -> None:
    """Where to go from here, as commands that work for the Python running the tour."""
    minigrad = _command("minigrad")
    say("")
    say("Next:")
    drawings = [str(r.svg) for r in (untied, tied) if r.svg is not None]
    if drawings:
        say(f"  - The drawings: open {' and '.join(drawings)} in a web browser.")
    say("  - The lessons measure each claim of the material, from the backward graph to analogies:")
    missing = missing_modules("lessons")
    if missing:
        say(f"    they need the `lessons` extra ({', '.join(missing)} is missing); install it once with")
        say(f"      {install_hint('lessons')}")
        say("    then:")
    say(f"      {minigrad} lessons      (the map of lessons and pieces)")
    say(f"      {minigrad} lesson 1     (the first, step by step)")
    say("  - The lab: this audit in your browser with your own vocabulary, tokens and width, and")
    say("    steps over time (a rare row and a frequent one under SGD, Adam and AdamW):")
    say(f"      {'make lab' if _in_checkout_with_make() else minigrad + ' lab'}")


def _command(name: str) -> str:
    """How to run this environment's console script `name` from here (`.venv/bin/minigrad` in a
    checkout set up by make), or `python -m minigrad.cli` when there is no script."""
    script = Path(sys.executable).with_name(name)
    if not script.is_file():
        return f"{sys.executable} -m minigrad.cli"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _in_checkout_with_make() -> bool:
    """True when the current folder is the source checkout minigrad runs from (its Makefile here)."""
    checkout = source_checkout()
    return checkout is not None and checkout == Path.cwd().resolve() and (checkout / "Makefile").is_file()


def _why_the_lookup_changed(untied: ModeResult, tied: ModeResult, say: Callable[[str], None]) -> None:
    """The lookup path's "cat" row differs between the modes though the path is the same: say why."""
    before = untied.ledger.table(untied.model.emb.weight, rows=[CAT])
    after = tied.ledger.table(tied.model.emb.weight, rows=[CAT])
    was = before.norm(CAT, before.paths[0])
    now = after.norm(CAT, next(p for p in after.paths if p.startswith("lookup")))
    say(f'  The lookup\'s own part of the "cat" row changed too ({was:.4f} untied, {now:.4f} tied),')
    say("  though it is the same path. What it carries is the error p - y sent back through the")
    say("  classifier's rows, dL/dh = (p - y) W: untied, W is the classifier's own table; tied, W is")
    say("  the embedding table itself, so both the probabilities p and the rows W are other numbers.")


def _printer(out: TextIO) -> Callable[[str], None]:
    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    return say


def _audit(mode: str, weights: BridgeWeights, out_dir: Path, interactive: bool,
           ask: Callable[[str], str], say: Callable[[str], None]) -> ModeResult:
    """Predict, backward under a ledger, print its tables, draw the graph."""
    model = Bridge(weights, tied=mode == "tied")
    guess = _predict(mode, interactive, ask, say)
    loss = model()
    loss.name = "loss"
    with ledger(names=model) as led:
        loss.backward()
    if mode == "untied":
        say("")
        say(f"Step 2. backward (loss {loss.item():.4f}); the gradient ledger gives, per row, the norm")
        say("  from each path and the norm of their sum:")
    else:
        say(f"  backward (loss {loss.item():.4f}); the gradient ledger:")
    for param in model.parameters():
        say(_indent(str(led.table(param, labels=VOCAB))))
    shared = model.emb.weight is model.head.weight
    answer = "one shared row" if shared else "separate tensors"
    if shared:
        cat = led.table(model.emb.weight, rows=[CAT])
        parts = " and ".join(f"{cat.norm(CAT, p):.4f}" for p in cat.paths)
        say('  So the "cat" gradients meet in one shared row: its total is the sum of both paths\'')
        say(f"  vectors. Norms do not add: {parts} give {cat.norm(CAT, 'total'):.4f}, because the two")
        say("  vectors point in different directions.")
    else:
        say('  So the "cat" gradients live in separate tensors: emb.weight got only the lookup\'s row,')
        say("  head.weight only the classifier's dense table.")
    if guess is not None:
        say(f"  You predicted {guess}: {'right' if guess == answer else 'not what happened'}.")
    result = ModeResult(mode, model, loss, led)
    result.svg = _draw(result, out_dir / f"{mode}.svg", say)
    return result


def _predict(mode: str, interactive: bool, ask: Callable[[str], str],
             say: Callable[[str], None]) -> str | None:
    """Ask for a prediction before the reveal, again until it is s or o; None when not
    interactive. q (or a closed stdin) stops the tour."""
    if not interactive:
        return None
    question = (f'  Predict ({mode}): will "cat"\'s lookup gradient and its classifier gradient land '
                "in [s]eparate tensors or [o]ne shared row? ")
    choices = {"s": "separate tensors", "o": "one shared row"}
    while True:
        try:
            reply = ask(question).strip().lower()
        except EOFError:  # Ctrl-D: end the prompt's line first
            say("")
            raise Stopped from None
        if reply in {"q", "quit"}:
            raise Stopped
        if reply[:1] in choices:
            return choices[reply[:1]]
        say("  (type s or o: commit to an answer before you see it)")


def _check(result: ModeResult, say: Callable[[str], None]) -> bool:
    """Finite differences of the full loss, and the ledger's totals against .grad."""
    names = result.model.param_names()
    params = list(result.model.parameters())  # a tied table is one parameter, used twice
    inputs = [Tensor(p.data, requires_grad=True, name=" = ".join(names[id(p)])) for p in params]
    report = gradcheck(lambda *ps: bridge_loss(ps[0], ps[-1]), inputs, raise_exception=False)
    for c in report.inputs:
        line = f"  {result.mode}, {c.name}: largest |numerical - analytical| {c.max_abs_error:.1e}"
        if c.ok:
            say(line + ": ok")
        else:  # say where and by how much
            say(line + f" at {list(c.worst_index or [])} (numerical {c.numerical:.8g}, analytical "
                f"{c.analytical:.8g}): FAILED")
    adds_up = True
    for p in params:
        total = to_dense(result.ledger.record(p).total())
        adds_up &= bool(np.allclose(total, to_dense(p.grad), rtol=1e-12, atol=0))
    say(f"  {result.mode}: each path's gradient, summed, equals .grad: {'ok' if adds_up else 'FAILED'}")
    return report.ok and adds_up


def _draw(result: ModeResult, path: Path, say: Callable[[str], None]) -> Path | None:
    """Draw the graph that was just backwarded (the ledger labels its edges) and render it."""
    graph = draw(result.loss, params=result.model, ledger=result.ledger, row=CAT)  # the ledger's row
    try:
        render(graph, format="svg", path=path)
    except GraphvizNotFoundError as err:
        say(f"  Could not render {path}: {err}")
        return None
    return path


def _cat_norm(result: ModeResult, name: str) -> float:
    return result.ledger.table(name, rows=[CAT]).norm(CAT, "total")


def _indent(text: str) -> str:
    return "  " + text.replace("\n", "\n  ")
