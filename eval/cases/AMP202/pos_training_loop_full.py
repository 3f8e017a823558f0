"""Pure fp16 training loop: the wholesale cast, the loss and the backward each have a finding."""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).cuda().half()  # expect: AMP101
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

for step in range(1000):
    x = torch.randn(256, 784, device="cuda").half()
    y = torch.randint(0, 10, (256,), device="cuda")
    loss = F.cross_entropy(model(x), y)  # expect: AMP202
    optimizer.zero_grad()
    loss.backward()  # expect: AMP102
    optimizer.step()
