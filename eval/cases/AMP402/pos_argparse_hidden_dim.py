"""Hidden width from an argparse default of 500."""
import argparse

import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--hidden-dim", type=int, default=500)
args = parser.parse_args()

model = nn.Sequential(nn.Linear(784, args.hidden_dim), nn.ReLU(), nn.Linear(args.hidden_dim, 10))  # expect: AMP402
model.half()  # trained in half precision: Tensor Cores run its GEMMs
