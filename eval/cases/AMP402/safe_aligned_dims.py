"""All dims multiples of 8."""
import torch.nn as nn

mlp = nn.Sequential(nn.Linear(768, 3072), nn.GELU(), nn.Linear(3072, 768))
conv = nn.Conv2d(64, 128, kernel_size=3, padding=1)
