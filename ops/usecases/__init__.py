"""The service layer: one module per use case (ingest, remember, …), called alike by the
HTTP API, the Mem0-compatible routes, the CLI and the workers, so that a policy — what a
bad batch does, what an edit queues — is written once. Adapters only translate."""
