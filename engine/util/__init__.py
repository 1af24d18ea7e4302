"""Small utilities shared across the engine."""
