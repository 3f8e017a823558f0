"""No cast anywhere: the model and its softmax are float32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2048, 1000)

    def forward(self, feats):
        return F.softmax(self.fc(feats), dim=-1)


clf = Classifier().cuda().eval()
with torch.no_grad():
    probs = clf(torch.randn(4, 2048, device="cuda"))
