"""Tensor.softmax method in the forward of a .half() classifier."""
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, in_features=2048, num_classes=1000):
        super().__init__()
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, feats):
        logits = self.fc(feats)
        return logits.softmax(dim=-1)  # expect: AMP201


clf = Classifier().half()
