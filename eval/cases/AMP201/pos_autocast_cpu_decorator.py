"""@torch.autocast("cpu", dtype=torch.float16) used as a decorator; softmax over an fp16 bmm output."""
import torch


@torch.autocast("cpu", dtype=torch.float16)
def attend(query, keys, values):
    weights = torch.bmm(query, keys.transpose(1, 2))
    weights = weights.softmax(dim=-1)  # expect: AMP201
    return torch.bmm(weights, values)


out = attend(torch.randn(8, 1, 64), torch.randn(8, 50, 64), torch.randn(8, 50, 64))
