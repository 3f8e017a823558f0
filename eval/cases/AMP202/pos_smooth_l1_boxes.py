"""Box regression loss (smooth L1) on float16 predictions of a .half() detector head."""
import torch
import torch.nn.functional as F
from torch import nn

box_head = nn.Linear(1024, 4 * 80).half()
roi_feats = torch.randn(512, 1024).half()
box_targets = torch.randn(512, 320).half()

with torch.no_grad():
    box_loss = F.smooth_l1_loss(box_head(roi_feats), box_targets, beta=1.0 / 9, reduction="sum")  # expect: AMP202
