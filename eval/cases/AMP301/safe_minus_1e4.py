"""-1e4 fits float16 (max 65504): HF BERT's additive mask value is safe."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d=768):
        super().__init__()
        self.qk = nn.Linear(d, 2 * d)

    def forward(self, x, attention_mask):
        q, k = self.qk(x).chunk(2, -1)
        scores = q @ k.transpose(-1, -2)
        extended = (1.0 - attention_mask[:, None, :].to(scores.dtype)) * -10000.0
        scores = scores + extended
        return scores.masked_fill(attention_mask[:, None, :] == 0, -1e4)


attn = Attention().half()
