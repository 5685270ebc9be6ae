"""`minigrad` on the command line."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from minigrad import lessons


def _demo() -> int:
    """The seed's vocabulary bridge, untied, with its gradient checked by finite differences."""
    import minigrad as mg
    from minigrad.nn import functional as F

    rng = np.random.default_rng(7)
    V, d = 6, 4
    E = mg.tensor(rng.normal(size=(V, d)) * 0.2, requires_grad=True, name="E")
    W = mg.tensor(rng.normal(size=(d, V)) * 0.2, requires_grad=True, name="W_U")
    context = np.array([0.05, -0.03, 0.02, 0.04])

    def loss_fn(E: mg.Tensor, W: mg.Tensor) -> mg.Tensor:
        h = E[np.array([1])] + context  # read "cat"
        return F.cross_entropy(h @ W, np.array([1]))  # and predict "cat"

    loss = loss_fn(E, W)
    loss.backward()
    print(f"loss {loss.item():.4f}")
    print("cat row gradient through the lookup:", np.round(E.grad[1], 4))
    print("rows the lookup touched:", np.flatnonzero(np.abs(E.grad).sum(axis=1)).tolist())
    report = mg.gradcheck(loss_fn, [E, W], raise_exception=False)
    print(report)
    return 0 if report.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="minigrad", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tour", help="a guided run of the vocabulary bridge audit")
    lessons.add_lesson_commands(sub)  # lessons | lesson N | check N
    args = parser.parse_args(argv)
    if args.command == "tour":
        return _demo()
    if args.command in lessons.COMMANDS:
        return lessons.run_command(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
