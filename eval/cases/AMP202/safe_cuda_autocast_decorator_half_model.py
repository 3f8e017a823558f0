"""A .half() model evaluated in a function decorated with @torch.autocast("cuda"): autocast upcasts the loss inputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).cuda().half().eval()


@torch.no_grad()
@torch.autocast("cuda")
def val_loss(x, y):
    return F.cross_entropy(model(x), y)
