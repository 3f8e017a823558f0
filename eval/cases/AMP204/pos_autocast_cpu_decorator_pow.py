"""@torch.autocast("cpu", dtype=torch.float16) function: pow of an fp16 matmul output (pow unlisted on CPU)."""
import torch


@torch.autocast("cpu", dtype=torch.float16)
def polynomial_kernel(a, b, degree=3):
    return torch.pow(a @ b.T + 1.0, degree)  # expect: AMP204


k = polynomial_kernel(torch.randn(128, 64), torch.randn(256, 64))
