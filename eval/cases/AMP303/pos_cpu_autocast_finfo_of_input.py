"""CPU fp16 autocast: scores from bmm are float16, finfo taken from the float32 query."""
import torch

query = torch.randn(4, 10, 64)
keys = torch.randn(4, 50, 64)
pad = torch.zeros(4, 1, 50, dtype=torch.bool)

with torch.autocast("cpu", dtype=torch.float16):
    scores = torch.bmm(query, keys.transpose(1, 2))
    scores = scores.masked_fill(pad, torch.finfo(query.dtype).min)  # expect: AMP303
