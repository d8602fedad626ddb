"""The algorithms: pure functions of ``(model, state...)`` for one sample."""
