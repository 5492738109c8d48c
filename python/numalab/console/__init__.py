"""Terminal output that knows nothing of numalab: plain-text tables (``tables``) and one progress
display for every long command (``progress``). Depends on rich and the standard library only, so
any layer may use it."""
