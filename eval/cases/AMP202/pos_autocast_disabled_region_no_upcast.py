"""Loss moved into an autocast(enabled=False) region without .float(): the fp16 logits keep their dtype."""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 4096)).cuda()
scaler = torch.amp.GradScaler("cuda")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

x = torch.randn(32, 1024, device="cuda")
y = torch.randint(0, 4096, (32,), device="cuda")
with torch.autocast("cuda"):
    logits = model(x)
    with torch.autocast("cuda", enabled=False):
        loss = F.cross_entropy(logits, y)  # expect: AMP202
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
