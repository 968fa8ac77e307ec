"""What every generated network keeps to: accumulators inside int32 for any inputs of the declared
types (``INT32_LIMIT``), else the generator fails with a ``BuildError``."""

__all__ = ["INT32_LIMIT", "BuildError"]

INT32_LIMIT = 2 ** 31


class BuildError(RuntimeError):
    """A generator built something inconsistent (overflow, bad calibration, ...)."""
