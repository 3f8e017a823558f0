"""Under CPU autocast softmax is not on the fp32 list: it runs in float16 on the fp16 matmul output."""
import torch
import torch.nn.functional as F

q = torch.randn(4, 64, 32)
k = torch.randn(4, 64, 32)
v = torch.randn(4, 64, 32)

with torch.autocast("cpu", dtype=torch.float16):
    scores = (q * 32 ** -0.5) @ k.transpose(-2, -1)
    attn = F.softmax(scores, dim=-1)  # expect: AMP201
    out = attn @ v
