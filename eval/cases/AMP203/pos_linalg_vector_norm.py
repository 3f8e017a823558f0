"""torch.linalg.vector_norm of float16 features in a .half() module."""
import torch
import torch.nn as nn


class CosineClassifier(nn.Module):
    def __init__(self, dim=512, n_classes=100):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_classes, dim))

    def forward(self, feats):
        feat_norm = torch.linalg.vector_norm(feats, ord=2, dim=-1, keepdim=True)  # expect: AMP203
        w = self.weight / self.weight.norm(dim=-1, keepdim=True)  # expect: AMP203
        return (feats / feat_norm) @ w.t()


clf = CosineClassifier().half()
