"""Example models built and trained with the engine, and the data they train on."""
