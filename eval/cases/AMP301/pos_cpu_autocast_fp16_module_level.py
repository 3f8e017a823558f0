"""CPU fp16 autocast: bmm output is float16; -1e9 fill raises."""
import torch

q = torch.randn(8, 32, 64)
k = torch.randn(8, 32, 64)
mask = torch.rand(8, 32, 32) > 0.5

with torch.autocast("cpu", dtype=torch.float16):
    scores = torch.bmm(q, k.transpose(1, 2))
    scores = scores.masked_fill(mask, -1e9)  # expect: AMP301
