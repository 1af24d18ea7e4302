"""Saving graphs, variables and models to disk (msgpack + raw tensor bytes; never pickle)."""
