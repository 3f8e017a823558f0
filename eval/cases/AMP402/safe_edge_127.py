"""Boundary: 127 < 128 (min-dim), so not reported even though misaligned."""
import torch.nn as nn

proj = nn.Linear(127, 256)
