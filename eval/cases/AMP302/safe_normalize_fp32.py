"""x / (norm + 1e-8) and F.normalize computed on float32 values in a .half() model."""
import torch.nn as nn
import torch.nn.functional as F


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(768, 256)

    def forward(self, h):
        z = self.proj(h).float()
        unit = z / (z.norm(dim=-1, keepdim=True) + 1e-8)
        return F.normalize(unit, dim=-1).type_as(h)


emb = Embedder().half()
