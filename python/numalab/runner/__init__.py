"""Runners turn a resolved configuration into a result document: ``sim`` via the Rust engine."""
