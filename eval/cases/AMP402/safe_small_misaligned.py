"""Misaligned but small dims (below min-dim 128): 2, 3, 10, 100."""
import torch.nn as nn

binary = nn.Linear(768, 2)
nli = nn.Linear(1024, 3)
cifar10 = nn.Linear(512, 10)
cifar100 = nn.Linear(4096, 100)
