"""Tools that look at a graph: finite-difference checks, the gradient ledger, the drawing,
and checkpoints that keep ties. They import the engine and nn, nothing above."""
