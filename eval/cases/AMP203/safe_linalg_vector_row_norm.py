"""torch.linalg.vector_norm over the feature dimension of float16 features in a .half() module: row
norms accumulate in float32 (a look-alike since norms were measured)."""
import torch
import torch.nn as nn


class CosineClassifier(nn.Module):
    def __init__(self, dim=512, n_classes=100):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_classes, dim))

    def forward(self, feats):
        feat_norm = torch.linalg.vector_norm(feats, ord=2, dim=-1, keepdim=True)
        w = self.weight / self.weight.norm(dim=-1, keepdim=True)
        return (feats / feat_norm) @ w.t()


clf = CosineClassifier().half()
