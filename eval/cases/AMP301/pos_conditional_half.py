"""`if args.fp16: model.half()`; on that path the -1e9 fill raises."""
import argparse

import torch
import torch.nn as nn


class Matcher(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, a, b, valid):
        sim = self.proj(a) @ b.transpose(-1, -2)
        return sim.masked_fill(~valid, -1e9)  # expect: AMP301


parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()
matcher = Matcher().cuda()
if args.fp16:
    matcher = matcher.half()
