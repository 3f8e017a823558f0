"""Vocabulary size from an argparse default (LLaMA vocab + 1 pad token)."""
import argparse

import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--vocab-size", type=int, default=32001)
parser.add_argument("--d-model", type=int, default=2048)
args = parser.parse_args()

output_layer = nn.Linear(args.d_model, args.vocab_size, bias=False)  # expect: AMP401
output_layer.half()  # trained in half precision: Tensor Cores run its GEMMs
