"""torch.full(..., finfo(float32).min, dtype=torch.float16) raises."""
import torch


def make_causal_bias(T, device):
    bias = torch.full((T, T), torch.finfo(torch.float32).min, dtype=torch.float16, device=device)  # expect: AMP303
    return torch.triu(bias, diagonal=1)
