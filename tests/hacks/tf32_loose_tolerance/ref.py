# C = A B, as a KernelBench reference: torch's matmul, KernelBench's tolerance.
import torch

atol = 1e-02
rtol = 1e-02


def reference(A, B, C, M, N, K):
    C.copy_(torch.matmul(A, B))
