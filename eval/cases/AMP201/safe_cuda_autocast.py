"""Under CUDA autocast softmax is on the fp32 list (set_opt_dtype): it runs in float32."""
import torch
import torch.nn.functional as F

q = torch.randn(4, 8, 128, 64, device="cuda")
k = torch.randn(4, 8, 128, 64, device="cuda")
v = torch.randn(4, 8, 128, 64, device="cuda")

with torch.autocast("cuda"):
    scores = (q * 64 ** -0.5) @ k.transpose(-2, -1)
    attn = F.softmax(scores, dim=-1)
    out = attn @ v
