"""Top-p sampling on float16 logits: the softmax runs in half. The cumsum of its probabilities runs in
half too but stays below 1: a sum kernel accumulates in float32, so it cannot overflow (no AMP203)."""
import torch
import torch.nn as nn

lm_head = nn.Linear(4096, 32000, bias=False).cuda().half()


def top_p_filter(hidden, top_p=0.9):
    logits = lm_head(hidden)
    sorted_logits, sorted_idx = torch.sort(logits, descending=True, dim=-1)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # expect: AMP201
    remove = cumulative_probs > top_p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    return logits.masked_fill(remove.scatter(-1, sorted_idx, remove), float("-inf"))
