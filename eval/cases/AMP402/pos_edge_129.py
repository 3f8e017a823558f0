"""Boundary: 129 is >= 128 and not a multiple of 8."""
import torch.nn as nn

bottleneck = nn.Linear(1024, 129)  # expect: AMP402
bottleneck.half()  # trained in half precision: Tensor Cores run its GEMMs
