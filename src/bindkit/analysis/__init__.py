"""Analyses of what a model does with bindings: attention margins, modality gap."""
