"""Model cast to bfloat16: exp overflows bf16 only above 88.7, as in fp32 - not an fp16 hazard."""
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 64)

    def forward(self, x):
        s = self.fc(x)
        return torch.exp(s) / torch.exp(s).sum(-1, keepdim=True)


scorer = Scorer().bfloat16()
