"""`if args.fp16: model.half()`; the fp32 finfo fill then raises on the fp16 path."""
import argparse

import torch
import torch.nn as nn


class SpanHead(nn.Module):
    def __init__(self, d=768):
        super().__init__()
        self.start = nn.Linear(d, 1)

    def forward(self, h, context_mask):
        logits = self.start(h).squeeze(-1)
        return logits.masked_fill(~context_mask, torch.finfo(torch.float32).min)  # expect: AMP303


parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()
head = SpanHead().cuda()
if args.fp16:
    head.half()
