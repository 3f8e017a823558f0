"""Under CPU fp16 autocast exp is unlisted: exp of an fp16 Linear output runs in float16."""
import torch
import torch.nn as nn

rate_head = nn.Linear(128, 10)
x = torch.randn(256, 128)

with torch.autocast("cpu", dtype=torch.float16):
    log_rate = rate_head(x)
    rate = torch.exp(log_rate)  # expect: AMP204
