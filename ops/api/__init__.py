"""The HTTP API (FastAPI): ingest hooks for chat backends, reads for agents, maintenance
for operators, and a Mem0-compatible surface. ``create_app`` builds it; ``memledger serve``
runs it with uvicorn."""
