"""The API's routers: memledger's own (``/v1``) and the Mem0-compatible ones."""
