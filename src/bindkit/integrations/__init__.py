"""Bridges to other evaluation tool kits (imported on demand; each needs its extra)."""
