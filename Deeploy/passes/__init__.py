"""Graph rewrites and the pass manager."""
