"""Half model, hand-written softmax computed on a .float() copy (the AMP204 fix)."""
import torch
import torch.nn as nn


class InfoNCE(nn.Module):
    def __init__(self, temperature=0.07):
        super().__init__()
        self.temperature = temperature

    def forward(self, z_a, z_b):
        logits = (z_a @ z_b.t() / self.temperature).float()
        probs = torch.exp(logits) / torch.exp(logits).sum(dim=-1, keepdim=True)
        return -torch.log(probs.diagonal()).mean()


loss_fn = InfoNCE().half()
