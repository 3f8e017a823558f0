"""Preallocated float16 causal bias filled in place with fill_(-1e9) (raises)."""
import torch


class KVCacheAttentionBias:
    def __init__(self, max_len=2048, device="cuda"):
        self.bias = torch.empty(max_len, max_len, dtype=torch.float16, device=device)
        self.bias.fill_(-1e9)  # expect: AMP301
        self.bias.triu_(1)

    def get(self, q_len, k_len):
        return self.bias[k_len - q_len:k_len, :k_len]
