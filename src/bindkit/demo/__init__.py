"""One-command demonstrations (``bindkit demo ...``)."""
