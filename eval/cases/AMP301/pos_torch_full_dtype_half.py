"""torch.full(..., -1e9, dtype=torch.float16) raises."""
import torch


def causal_bias(T, device):
    bias = torch.full((T, T), -1e9, dtype=torch.float16, device=device)  # expect: AMP301
    return torch.triu(bias, diagonal=1)
