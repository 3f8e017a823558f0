"""torch.autocast("cpu") defaults to bfloat16: the bmm output is bf16 and -1e9 fits."""
import torch

q = torch.randn(8, 32, 64)
k = torch.randn(8, 32, 64)
mask = torch.rand(8, 32, 32) > 0.5

with torch.autocast("cpu"):
    scores = torch.bmm(q, k.transpose(1, 2))
    scores = scores.masked_fill(mask, -1e9)
