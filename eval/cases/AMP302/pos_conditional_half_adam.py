"""`if args.fp16: model.half()` followed by a plain Adam (default eps): on that path eps is 0."""
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
parser.add_argument("--lr", type=float, default=1e-3)
args = parser.parse_args()

model = nn.GRU(128, 256, batch_first=True).cuda()
if args.fp16:
    model.half()  # expect: AMP101
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)  # expect: AMP302
