"""x / (norm + 1e-8) in float16: the eps vanishes, zero rows give NaN; also a hand-written x / x.norm()."""
import torch.nn as nn


class Normalize(nn.Module):
    def forward(self, x):
        return x / (x.norm(dim=-1, keepdim=True) + 1e-8)  # expect: AMP302


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(768, 256)
        self.norm = Normalize()

    def forward(self, h):
        return self.norm(self.proj(h))


emb = Embedder().half()
