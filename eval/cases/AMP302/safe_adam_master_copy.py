"""Manual master weights: Adam(eps=1e-8) runs over float32 clones of the float16 model's parameters."""
import torch
import torch.nn as nn

model = nn.Linear(1024, 1024).cuda().half()
master_params = [p.detach().clone().float().requires_grad_(True) for p in model.parameters()]
optimizer = torch.optim.Adam(master_params, lr=1e-4, eps=1e-8)


def step():
    for master, p in zip(master_params, model.parameters()):
        master.grad = p.grad.float() / 1024.0
    optimizer.step()
    for master, p in zip(master_params, model.parameters()):
        p.data.copy_(master.data)
