"""flowserve: an asyncio model server for saved engine graphs."""

__version__ = "0.1.0"
