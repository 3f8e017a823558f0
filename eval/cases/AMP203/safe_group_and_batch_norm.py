"""nn.GroupNorm and nn.BatchNorm2d in a .half() CNN: native normalisation, not hand-written."""
import torch.nn as nn

net = nn.Sequential(
    nn.Conv2d(3, 64, 3, padding=1),
    nn.GroupNorm(32, 64),
    nn.SiLU(),
    nn.Conv2d(64, 128, 3, padding=1),
    nn.BatchNorm2d(128),
    nn.ReLU(),
).cuda().half()
