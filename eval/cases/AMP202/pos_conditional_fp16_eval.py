"""`if args.fp16: model = model.half()`; the evaluation loss then sees float16 logits on the fp16 path."""
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()

model = nn.Sequential(nn.Linear(300, 512), nn.ReLU(), nn.Linear(512, 5)).cuda()  # expect: AMP402
if args.fp16:
    model = model.half()
criterion = nn.CrossEntropyLoss()


@torch.no_grad()
def evaluate(batches):
    losses = []
    for x, y in batches:
        x = x.cuda().half() if args.fp16 else x.cuda()
        losses.append(criterion(model(x), y.cuda()).item())  # expect: AMP202
    return sum(losses) / len(losses)
