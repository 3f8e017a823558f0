"""LLaMA vocabulary 32000 (multiple of 8)."""
import torch.nn as nn


class LMHead(nn.Module):
    def __init__(self, dim=4096):
        super().__init__()
        self.output = nn.Linear(dim, 32000, bias=False)
