"""Triton kernels for the triton worker. A module of their own: ``triton.jit`` reads the
kernels' source and resolves names through module globals, and importing this module is
only done once the worker knows triton imports and a GPU is present."""

import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    """One program per row, the whole row in registers: one read and one write of the
    data, where an unfused softmax reads it three times."""
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n_cols
    x = tl.load(in_ptr + row * in_stride + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    tl.store(out_ptr + row * out_stride + offsets, numerator / tl.sum(numerator, axis=0), mask=mask)


def vector_add(x, y, out, block=1024):
    n = x.numel()
    vector_add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


def softmax(x, out):
    rows, cols = x.shape
    softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out


def forget_compiled(kernel):
    """Drops ``kernel``'s in-process compiled variants, so its next launch compiles again.
    Returns False where this Triton keeps them somewhere this does not know."""
    for name in ("device_caches", "cache"):  # Triton 3.x, then 2.x
        caches = getattr(kernel, name, None)
        if caches is not None and hasattr(caches, "clear"):
            caches.clear()
            return True
    return False
