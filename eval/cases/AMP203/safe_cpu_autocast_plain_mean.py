"""Under CPU fp16 autocast, mean of a Linear output stays float16 (mean is unlisted) but cannot overflow: its kernel accumulates in fp32."""
import torch
import torch.nn as nn

layer = nn.Linear(256, 256)
x = torch.randn(32, 128, 256)

with torch.autocast("cpu", dtype=torch.float16):
    h = layer(x)
    mu = h.mean(dim=-1, keepdim=True)  # plain mean: fp32 accumulation, bounded by its inputs (not AMP203)
    centered = h - mu
