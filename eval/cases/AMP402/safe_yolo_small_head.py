"""Per-class detection head with 85 channels (80 classes + 5): below min-dim."""
import torch.nn as nn

pred = nn.Conv2d(256, 85, kernel_size=1)
