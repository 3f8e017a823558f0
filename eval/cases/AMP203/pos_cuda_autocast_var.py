"""Under CUDA autocast var/mean are unlisted: statistics of an fp16 Linear output are float16."""
import torch
import torch.nn as nn


class FFNWithPostNorm(nn.Module):
    def __init__(self, d=1024, eps=1e-5):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.eps = eps

    def forward(self, x):
        h = self.fc2(torch.relu(self.fc1(x)))
        mu = h.mean(dim=-1, keepdim=True)  # plain mean: fp32 accumulation, bounded by its inputs (not AMP203)
        var = h.var(dim=-1, keepdim=True, unbiased=False)  # expect: AMP203
        return x + (h - mu) / torch.sqrt(var + self.eps)


ffn = FFNWithPostNorm().cuda()
with torch.autocast("cuda"):
    y = ffn(torch.randn(8, 512, 1024, device="cuda"))
