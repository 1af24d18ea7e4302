"""The engine's version, recorded in the graphs it saves."""

__version__ = "0.1.0"
