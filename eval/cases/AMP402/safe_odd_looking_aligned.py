"""Odd-looking but aligned sizes: 136, 1032, 11008 (LLaMA FFN), 1368."""
import torch.nn as nn

a = nn.Linear(136, 1032)
b = nn.Linear(4096, 11008, bias=False)
c = nn.Conv1d(1368, 1368, kernel_size=1)
