"""CUDA autocast with dtype=torch.bfloat16: matmul outputs are bf16, -1e9 fits."""
import torch

q = torch.randn(2, 8, 128, 64, device="cuda")
k = torch.randn(2, 8, 128, 64, device="cuda")
pad = torch.zeros(2, 1, 1, 128, dtype=torch.bool, device="cuda")

with torch.autocast("cuda", dtype=torch.bfloat16):
    scores = q @ k.transpose(-2, -1)
    scores = scores.masked_fill(pad, -1e9)
