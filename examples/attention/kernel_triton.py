# A FlashAttention-2-style forward pass in Triton: O = softmax(Q K^T * scale) V per
# (batch, head), no mask, no dropout, scale = 1/sqrt(D); Q, K, V, O are contiguous
# [B, H, S, D] fp16 tensors. run_kernel(**tensors, **dims, **params) launches it.
#
# One program per (BLOCK_M query rows, batch * head). It keeps its Q tile on chip and walks
# the keys in blocks of BLOCK_N with an online softmax: the running row maximum m_i and row
# sum l_i in f32 (in the log2 domain: exp2 with log2(e) * scale folded into one multiplier),
# the f32 accumulator rescaled by exp2(m_old - m_new) whenever the maximum grows, P cast to
# fp16 for the second tensor-core dot, and a single division by l_i at the end.
#
# Tails: the key blocks that lie wholly inside S run unmasked; a last partial block (S not a
# multiple of BLOCK_N) is loaded with masks (zeros past S) and its scores past S set to -inf
# before the softmax. Query rows past S (the last program along axis 0) are loaded as zeros
# and never stored.
import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))


@triton.jit
def _attn_block(acc, m_i, l_i, q, k_ptrs, v_ptrs, start_n, offs_n, S, stride_kn, stride_vn, qk_scale,
                MASKED: tl.constexpr):
    """One BLOCK_N block of keys: scores, online-softmax update, P V into the accumulator."""
    if MASKED:
        valid = (start_n + offs_n) < S
        k = tl.load(k_ptrs + start_n * stride_kn, mask=valid[:, None], other=0.0)
    else:
        k = tl.load(k_ptrs + start_n * stride_kn)
    qk = tl.dot(q, tl.trans(k))  # [BLOCK_M, BLOCK_N], f32
    if MASKED:
        qk = tl.where(valid[None, :], qk, float("-inf"))
    # Row maximum of the scaled scores, in log2 units; every block holds at least one valid
    # key, so m_new is finite and exp2(-inf - m_new) below is 0, never NaN.
    m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)  # 0 on the first block (m_i = -inf)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    if MASKED:
        v = tl.load(v_ptrs + start_n * stride_vn, mask=valid[:, None], other=0.0)
    else:
        v = tl.load(v_ptrs + start_n * stride_vn)
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, m_new, l_i


@triton.jit
def _attn_fwd(Q, K, V, O, qk_scale,
              stride_qz, stride_qh, stride_qm, stride_qd,
              stride_kz, stride_kh, stride_kn, stride_kd,
              stride_vz, stride_vh, stride_vn, stride_vd,
              stride_oz, stride_oh, stride_om, stride_od,
              H, S,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              HAS_TAIL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = (off_hz // H).to(tl.int64)
    off_h = (off_hz % H).to(tl.int64)
    q_base = Q + off_z * stride_qz + off_h * stride_qh
    k_base = K + off_z * stride_kz + off_h * stride_kh
    v_base = V + off_z * stride_vz + off_h * stride_vh
    o_base = O + off_z * stride_oz + off_h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < S

    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd, mask=row_ok[:, None], other=0.0)
    k_ptrs = k_base + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd  # [BLOCK_N, HEAD_DIM]
    v_ptrs = v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd  # [BLOCK_N, HEAD_DIM]

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    n_full = (S // BLOCK_N) * BLOCK_N
    for start_n in range(0, n_full, BLOCK_N):
        acc, m_i, l_i = _attn_block(acc, m_i, l_i, q, k_ptrs, v_ptrs, start_n, offs_n, S, stride_kn, stride_vn,
                                    qk_scale, MASKED=False)
    if HAS_TAIL:
        acc, m_i, l_i = _attn_block(acc, m_i, l_i, q, k_ptrs, v_ptrs, n_full, offs_n, S, stride_kn, stride_vn,
                                    qk_scale, MASKED=True)

    acc = acc / l_i[:, None]
    o_ptrs = o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=row_ok[:, None])


def run_kernel(Q, K, V, O, B, H, S, D, BLOCK_M, BLOCK_N, WARPS, STAGES, **_):
    assert D >= 16 and D & (D - 1) == 0, "D (the head dim) must be a power of two >= 16 (tl.arange, tl.dot)"
    assert Q.shape == K.shape == V.shape == O.shape == (B, H, S, D)
    qk_scale = (1.0 / math.sqrt(D)) * LOG2E
    grid = (triton.cdiv(S, BLOCK_M), B * H)  # axis 0 fastest: the programs of one head run together (K, V in L2)
    _attn_fwd[grid](
        Q, K, V, O, qk_scale,
        *Q.stride(), *K.stride(), *V.stride(), *O.stride(),
        H, S,
        HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, HAS_TAIL=(S % BLOCK_N != 0),
        num_warps=WARPS, num_stages=STAGES,
    )
