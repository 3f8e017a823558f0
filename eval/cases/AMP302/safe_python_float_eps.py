"""eps=1e-8 in plain Python arithmetic (metrics), next to a .half() model."""
import torch.nn as nn

model = nn.Linear(128, 2).cuda().half().eval()


def f1(tp, fp, fn):
    precision = tp / (tp + fp + 1e-8)
    recall = tp / (tp + fn + 1e-8)
    return 2 * precision * recall / (precision + recall + 1e-8)
