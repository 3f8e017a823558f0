"""Loss inside CUDA autocast: cross_entropy is on the fp32 list, the fp16 logits are upcast by autocast."""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 1000)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
scaler = torch.amp.GradScaler("cuda")

for x, y in [(torch.randn(64, 1024, device="cuda"), torch.randint(0, 1000, (64,), device="cuda"))]:
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
