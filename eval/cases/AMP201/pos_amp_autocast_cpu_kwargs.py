"""torch.amp.autocast(device_type="cpu", dtype=torch.float16) with a log_softmax head."""
import torch
from torch import nn

encoder = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 64))
x = torch.randn(16, 256)

with torch.amp.autocast(device_type="cpu", dtype=torch.float16):
    logits = encoder(x)
    log_probs = torch.log_softmax(logits, dim=1)  # expect: AMP201
