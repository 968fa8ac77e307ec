"""Generic programs run on the host; ``--sanitize`` builds them with AddressSanitizer and UBSan,
stopping at the first error."""

from Deeploy.platform import TargetRunner

__all__ = ["RUNNER"]

RUNNER = TargetRunner(build_options=lambda options, gen:
                      ["-DDEEPLOY_SANITIZE=ON"] if getattr(options, "sanitize", False) else [])
