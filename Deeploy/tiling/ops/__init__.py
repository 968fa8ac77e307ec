"""Tiling rules, one module per op family; ``Deeploy.tiling.constraints`` dispatches to them."""
