"""Training: optimizers, the global step and checkpoints (exposed as ``engine.train``)."""
