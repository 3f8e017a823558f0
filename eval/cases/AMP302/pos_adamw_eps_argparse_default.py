"""AdamW eps comes from an argparse default of 1e-8; the model is cast with .half()."""
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--adam-eps", type=float, default=1e-8)
args = parser.parse_args()

model = nn.Sequential(nn.Embedding(32000, 512), nn.Linear(512, 512)).half()  # expect: AMP101
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, eps=args.adam_eps)  # expect: AMP302
