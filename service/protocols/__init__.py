"""Protocol adapters: parse requests, call the ModelManager, serialize responses."""
