"""User-derived text (tensor, node and file names) made safe for generated C: inside block
comments and inside string literals."""

from __future__ import annotations

__all__ = ["comment_text", "string_literal", "c_float", "c_floats"]


def c_float(value: float) -> str:
    """A C float expression of ``value`` rounded to float32, exact (infinities and NaN included)."""
    import numpy as np
    v = float(np.float32(value))
    if v != v:
        return "__builtin_nanf(\"\")"
    if v in (float("inf"), float("-inf")):
        return "__builtin_inff()" if v > 0 else "(-__builtin_inff())"
    return f"{v!r}f"


def c_floats(values) -> list[str]:
    """``c_float`` of every element of the array ``values``, formatted in bulk: a float32 held
    in a double prints (``repr``) as the shortest decimal that reads back as that float32."""
    import numpy as np
    flat = np.asarray(values, dtype=np.float32).reshape(-1)
    out = [f"{v!r}f" for v in flat.astype(np.float64).tolist()]
    for i in np.flatnonzero(~np.isfinite(flat)).tolist():
        out[i] = c_float(flat[i])
    return out


def comment_text(text: object) -> str:
    """``text`` for the inside of a C block comment: comment delimiters are broken up and
    control characters written as escapes, so the comment ends where the generator ends it."""
    text = str(text)
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
    while "*/" in text or "/*" in text:
        text = text.replace("*/", "* /").replace("/*", "/ *")
    return text


def string_literal(text: object) -> str:
    """``text`` as a quoted C string literal (UTF-8 bytes; quotes, backslashes, control and
    non-ASCII bytes as octal escapes, and '?' escaped so no trigraph can form)."""
    out = []
    for byte in str(text).encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?' or not 32 <= byte < 127:
            out.append(f"\\{byte:03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
