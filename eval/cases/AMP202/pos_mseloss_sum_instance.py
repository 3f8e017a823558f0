"""nn.MSELoss(reduction="sum") on the outputs of a model cast with .to(torch.float16)."""
import torch
from torch import nn

net = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 64)).to(torch.float16)
loss_fn = nn.MSELoss(reduction="sum")

x = torch.randn(1024, 64, dtype=torch.float16)
with torch.no_grad():
    recon_loss = loss_fn(net(x), x)  # expect: AMP202
