"""F.binary_cross_entropy_with_logits on float16 multi-label logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiLabelHead(nn.Module):
    def __init__(self, in_dim=768, n_labels=128):
        super().__init__()
        self.fc = nn.Linear(in_dim, n_labels)

    def forward(self, pooled, labels=None):
        logits = self.fc(pooled)
        if labels is None:
            return logits
        return F.binary_cross_entropy_with_logits(logits, labels.type_as(logits))  # expect: AMP202


head = MultiLabelHead().cuda().half()
