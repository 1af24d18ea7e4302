"""Readers and writers for model formats of other tools (one subpackage per format)."""
