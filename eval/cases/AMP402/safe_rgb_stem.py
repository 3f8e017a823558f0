"""A 3-channel RGB stem conv: 3 < 128."""
import torch.nn as nn

stem = nn.Sequential(nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU())
