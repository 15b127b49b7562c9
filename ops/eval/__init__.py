"""Evaluations on public benchmarks (``memledger eval ...``)."""
