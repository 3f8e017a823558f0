"""argparse default vocabulary already padded (50304)."""
import argparse

import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--vocab-size", type=int, default=50304)
args = parser.parse_args()

lm_head = nn.Linear(768, args.vocab_size, bias=False)
