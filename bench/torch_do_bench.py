"""triton.testing.do_bench medians of PyTorch ops equivalent to kopt's examples (JSON on stdout)."""
import json

import torch
import triton

torch.backends.cuda.matmul.allow_tf32 = False  # a true f32 GEMM, like the example's
dev = "cuda"
g = torch.Generator(device=dev).manual_seed(1)
out = {}

a = torch.randn(1 << 24, device=dev, generator=g)
b = torch.randn(1 << 24, device=dev, generator=g)
c = torch.empty_like(a)
out["add"] = {"what": "torch.add(out=)", "median_s": triton.testing.do_bench(lambda: torch.add(a, b, out=c), return_mode="median") / 1e3}

x = torch.randn(2048, 4096, device=dev, generator=g) * 2
out["softmax"] = {"what": "torch.softmax(dim=-1)", "median_s": triton.testing.do_bench(lambda: torch.softmax(x, dim=-1), return_mode="median") / 1e3}

A = torch.rand(1024, 1024, device=dev, generator=g) * 2 - 1
B = torch.rand(1024, 1024, device=dev, generator=g) * 2 - 1
out["matmul"] = {"what": "torch.matmul f32 no-TF32", "median_s": triton.testing.do_bench(lambda: A @ B, return_mode="median") / 1e3}

print(json.dumps(out))
