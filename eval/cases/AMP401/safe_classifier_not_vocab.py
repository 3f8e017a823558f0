"""A 3-way classifier head: not vocabulary-sized (and below AMP402's min-dim)."""
import torch.nn as nn


class NLIHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(1024, 1024)
        self.out_proj = nn.Linear(1024, 3)
