"""Test fixtures, not product: ground-truth repositories and simulations for torchpulse's own
tests and experiments (tests/, experiments/). Nothing that runs for a user (the alert, the
dashboard, publish) imports this package."""
