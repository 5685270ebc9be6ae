"""The learning experience on top of everything: the tour, the lesson runner, the corpus,
and the training loop."""
