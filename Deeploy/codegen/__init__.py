"""Code generation: C project emission from a bound, planned graph."""
