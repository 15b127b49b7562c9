"""The background side: dramatiq build and projection actors, the consolidation schedule,
and the in-process pipeline ``memledger run`` and ``serve`` start."""
