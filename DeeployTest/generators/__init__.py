"""Generators of the project's own test networks (see DeeployTest/generate_tests.py).

Every family module registers builder functions with ``@test("Kernels/<Op>/<Variant>")``; a
builder takes a seeded ``numpy.random.Generator`` and returns a ``Net``. Seeds derive from the
test path, so adding or removing a test never changes the others."""

from DeeployTest.generators.registry import FAMILIES, TESTS, all_tests, test  # noqa: F401
