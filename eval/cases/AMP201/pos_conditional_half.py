"""`if args.fp16: model.half()` - on the fp16 path the softmax runs in float16 (conditional casts count)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(768, 768)

    def forward(self, queries, docs):
        sims = self.proj(queries) @ docs.transpose(0, 1)
        return F.log_softmax(sims, dim=-1)  # expect: AMP201


parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()

model = Scorer().cuda()
if args.fp16:
    model.half()
