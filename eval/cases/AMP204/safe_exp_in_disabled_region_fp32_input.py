"""Inside CPU fp16 autocast, an autocast(enabled=False) region computes exp of a float32 input that never went through autocast."""
import torch
import torch.nn as nn

encoder = nn.Linear(64, 64)
x = torch.randn(32, 64)
log_prior = torch.randn(32, 64)

with torch.autocast("cpu", dtype=torch.float16):
    h = encoder(x)
    with torch.autocast("cpu", enabled=False):
        prior = torch.exp(log_prior)
