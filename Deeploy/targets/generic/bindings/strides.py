"""Index arithmetic shared by kernel call templates: broadcast strides, permuted strides."""

from __future__ import annotations



__all__ = ["contiguous_strides", "merge_strided_dims", "broadcast_operands", "transpose_operands", "pad_left"]


def contiguous_strides(shape) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def pad_left(values, length: int, fill: int) -> list[int]:
    values = list(values)
    return [fill] * (length - len(values)) + values


def broadcast_operands(out_shape, in_shapes, max_dims: int = 4):
    """Collapsed output dims and per-input element strides (0 on broadcast dims), or None if
    more than ``max_dims`` dims remain after merging dims that are contiguous for all inputs."""
    rank = len(out_shape)
    dims = list(out_shape) or [1]
    all_strides = []
    for shape in in_shapes:
        shape = pad_left(shape, rank, 1)
        full = contiguous_strides(shape)
        all_strides.append([0 if shape[k] == 1 and out_shape[k] != 1 else full[k] for k in range(rank)] or [1])
    k = len(dims) - 1
    while k > 0:
        if all(s[k - 1] == s[k] * dims[k] for s in all_strides):
            dims[k - 1] *= dims[k]
            for s in all_strides:
                s[k - 1] = s[k]
                del s[k]
            del dims[k]
        k -= 1
    drop = [k for k, d in enumerate(dims) if d == 1 and len(dims) > 1]
    for k in reversed(drop):
        if len(dims) > 1:
            del dims[k]
            for s in all_strides:
                del s[k]
    if len(dims) > max_dims:
        return None
    return pad_left(dims, max_dims, 1), [pad_left(s, max_dims, 0) for s in all_strides]


def merge_strided_dims(dims, strides) -> tuple[list[int], list[int]]:
    """Drop size-1 dims and merge neighbours whose strides make them one contiguous run."""
    keep = [k for k, d in enumerate(dims) if d != 1] or [0]
    dims, strides = [dims[k] for k in keep], [strides[k] for k in keep]
    k = len(dims) - 1
    while k > 0:
        if strides[k - 1] == strides[k] * dims[k]:
            dims[k - 1] *= dims[k]
            strides[k - 1] = strides[k]
            del dims[k], strides[k]
        k -= 1
    return dims, strides


def transpose_operands(in_shape, perm, max_dims: int = 6):
    """Output dims and the input strides in output-axis order, merged where the permutation
    keeps axes adjacent, padded to ``max_dims``; None if too many dims remain."""
    in_strides = contiguous_strides(in_shape)
    dims, strides = merge_strided_dims([in_shape[a] for a in perm], [in_strides[a] for a in perm])
    if len(dims) > max_dims:
        return None
    return pad_left(dims, max_dims, 1), pad_left(strides, max_dims, 0)


