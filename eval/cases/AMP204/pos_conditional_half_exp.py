"""`if args.half: model.half()`; the duration predictor's exp then runs in float16 on that path."""
import argparse

import torch
import torch.nn as nn


class DurationPredictor(nn.Module):
    def __init__(self, d=384):
        super().__init__()
        self.conv = nn.Conv1d(d, d, 3, padding=1)
        self.out = nn.Linear(d, 1)

    def forward(self, h):
        log_dur = self.out(torch.relu(self.conv(h.transpose(1, 2))).transpose(1, 2)).squeeze(-1)
        return torch.clamp(torch.round(log_dur.exp() - 1), min=0)  # expect: AMP204


parser = argparse.ArgumentParser()
parser.add_argument("--half", action="store_true")
args = parser.parse_args()
model = DurationPredictor().cuda().eval()
if args.half:
    model.half()
