"""Tiling rules, one module per op family; ``Deeploy.tiling.families`` names them per family."""
