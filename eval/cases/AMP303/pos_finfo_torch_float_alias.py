"""torch.finfo(torch.float).min - torch.float is float32 - on float16 logits."""
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(768, 1000)

    def forward(self, h, invalid):
        return self.fc(h).masked_fill(invalid, torch.finfo(torch.float).min)  # expect: AMP303


clf = Classifier().half()
