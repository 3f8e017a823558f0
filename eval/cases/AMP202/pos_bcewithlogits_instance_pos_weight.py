"""nn.BCEWithLogitsLoss(pos_weight=...) instance applied to float16 logits."""
import torch
import torch.nn as nn


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.cls = nn.Linear(64, 1)

    def forward(self, x):
        return self.cls(self.backbone(x)).squeeze(-1)


det = Detector().cuda().half()
criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(10.0, device="cuda").half())
imgs = torch.randn(32, 3, 224, 224, device="cuda").half()
is_pos = torch.randint(0, 2, (32,), device="cuda").half()
with torch.no_grad():
    val = criterion(det(imgs), is_pos)  # expect: AMP202
