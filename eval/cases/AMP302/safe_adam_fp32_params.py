"""Adam(eps=1e-8) over float32 parameters, trained with autocast + GradScaler."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-8)
scaler = torch.amp.GradScaler("cuda")

for x, y in [(torch.randn(64, 512, device="cuda"), torch.randint(0, 10, (64,), device="cuda"))]:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
