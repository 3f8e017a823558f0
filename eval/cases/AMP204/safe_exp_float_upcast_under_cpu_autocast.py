"""Under CPU fp16 autocast, exp taken on an explicit .float() of the fp16 Linear output."""
import torch
import torch.nn as nn

rate_head = nn.Linear(128, 10)
x = torch.randn(256, 128)

with torch.autocast("cpu", dtype=torch.float16):
    log_rate = rate_head(x)
    rate = torch.exp(log_rate.float())
    energy = log_rate.float().pow(2)
