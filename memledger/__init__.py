"""memledger for its callers: :mod:`memledger.client`, the typed client of the HTTP API."""
