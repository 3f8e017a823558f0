"""CUDA bf16 autocast: finfo(torch.bfloat16).min on the bf16 matmul output."""
import torch

q = torch.randn(2, 8, 256, 64, device="cuda")
k = torch.randn(2, 8, 256, 64, device="cuda")
pad = torch.zeros(2, 1, 1, 256, dtype=torch.bool, device="cuda")

with torch.autocast("cuda", dtype=torch.bfloat16):
    scores = q @ k.transpose(-2, -1)
    scores = scores.masked_fill(pad, torch.finfo(torch.bfloat16).min)
