"""The float64 attention reference, computed in chunks within a stated memory budget.

A materialised float64 reference needs B·H·S²·8 bytes for the score matrix alone: 68.7 GB
at b8_h16_s8192, more than an 80 GB GPU has left beside the benchmark's own tensors. So the
check walks the output in chunks (several heads at once where a head's scores are small,
else blocks of query rows of one head), converting only that chunk's Q, K and V to float64,
and compares every element: the same max-relative-error rule as
``torch_common.check_close`` (max|got − want| / max|want|), nothing skipped.

Imports only the standard library; the caller passes ``torch``.
"""

# Live float64 temporaries per score element in one chunk: the scores, their exponentials
# (softmax's output) and the causal mask's masked copy.
TEMPORARIES_PER_SCORE = 3
FLOAT64_BYTES = 8
# What one chunk of the reference may hold in score-sized temporaries: 1 GiB, well inside
# any GPU that runs the full suite, and few chunks (128 at b8_h16_s8192).
DEFAULT_BUDGET_BYTES = 1 << 30


def chunk_plan(heads, seq, budget_bytes=DEFAULT_BUDGET_BYTES):
    """(heads per chunk, query rows per chunk) so one chunk's temporaries fit the budget.
    Raises ValueError when even one query row does not fit."""
    per_row = TEMPORARIES_PER_SCORE * FLOAT64_BYTES * seq
    if per_row > budget_bytes:
        raise ValueError(f"one query row of the reference needs {per_row} bytes, over the budget of {budget_bytes}")
    per_head = per_row * seq
    if per_head <= budget_bytes:
        return max(1, min(heads, budget_bytes // per_head)), seq
    return 1, budget_bytes // per_row


def reference_chunks(torch, q, k, v, causal, budget_bytes=DEFAULT_BUDGET_BYTES):
    """Yields ((head slice, row slice), float64 reference) over (B·H, S, D) views of q, k, v
    (inputs shaped (B, H, S, D)), covering every output element exactly once."""
    b, h, s, d = q.shape
    qf, kf, vf = (t.reshape(b * h, s, d) for t in (q, k, v))
    heads_per_chunk, rows = chunk_plan(b * h, s, budget_bytes)
    scale = d**-0.5
    for head in range(0, b * h, heads_per_chunk):
        heads = slice(head, min(head + heads_per_chunk, b * h))
        keys, values = kf[heads].double(), vf[heads].double()
        for row in range(0, s, rows):
            queries = slice(row, min(row + rows, s))
            scores = (qf[heads, queries].double() @ keys.transpose(-2, -1)) * scale
            if causal:
                query_pos = torch.arange(queries.start, queries.stop, device=q.device)
                key_pos = torch.arange(s, device=q.device)
                scores = scores.masked_fill(key_pos[None, :] > query_pos[:, None], float("-inf"))
            yield (heads, queries), torch.softmax(scores, dim=-1) @ values


def max_relative_error(torch, got, q, k, v, causal, budget_bytes=DEFAULT_BUDGET_BYTES):
    """max|got − want| / max|want| over every element, with want built chunk by chunk.
    Returns (error, None), or (None, why) when ``got`` has the wrong shape or a non-finite
    value."""
    if tuple(got.shape) != tuple(q.shape[:-1]) + (v.shape[-1],):
        return None, f"shape {tuple(got.shape)}, expected {tuple(q.shape[:-1]) + (v.shape[-1],)}"
    b, h, s, _ = q.shape
    flat = got.reshape(b * h, s, -1)
    worst, scale = 0.0, 0.0
    for (heads, queries), want in reference_chunks(torch, q, k, v, causal, budget_bytes):
        part = flat[heads, queries].double()
        if not bool(part.isfinite().all()):
            return None, "output has non-finite values"
        worst = max(worst, float((part - want).abs().max()))
        scale = max(scale, float(want.abs().max()))
    return worst / (scale or 1.0), None
