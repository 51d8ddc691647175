# PyTorch's own attention paths as kopt kernels, so that kopt times them with the very same
# timer (flush, schedule, stop rules, device events) as the Triton candidate:
#   run_math:  F.scaled_dot_product_attention under SDPBackend.MATH (Q K^T, softmax, P V as
#              separate ops, the S x S matrix through memory);
#   run_flash: the same call under SDPBackend.FLASH_ATTENTION (torch's FlashAttention-2).
#
# Neither path takes an output tensor (no out= in F.scaled_dot_product_attention nor in the
# aten ops behind it): each returns its result, and kopt copies it into O after the timed
# call (a Triton-kind kernel may return its output), so these rows time torch's attention
# alone, as the candidate's row times the candidate.
import torch
import torch.nn.functional as F

try:  # torch >= 2.3
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def _math():
        return sdpa_kernel(SDPBackend.MATH)

    def _flash():
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
except ImportError:  # torch 2.0 - 2.2
    def _math():
        return torch.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False)

    def _flash():
        return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False)


def run_math(Q, K, V, **_):
    with torch.no_grad(), _math():
        return F.scaled_dot_product_attention(Q, K, V)


def run_flash(Q, K, V, **_):
    with torch.no_grad(), _flash():
        return F.scaled_dot_product_attention(Q, K, V)
