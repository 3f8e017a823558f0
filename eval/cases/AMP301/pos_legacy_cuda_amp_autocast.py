"""torch.cuda.amp.autocast (deprecated: AMP501) region; masked_fill(-1e9) on the fp16 matmul output."""
import torch

q = torch.randn(2, 8, 128, 64, device="cuda")
k = torch.randn(2, 8, 128, 64, device="cuda")
causal = torch.ones(128, 128, device="cuda").tril().bool()

with torch.cuda.amp.autocast():  # expect: AMP501
    scores = torch.matmul(q, k.transpose(-2, -1)) * 0.125
    scores = scores.masked_fill(~causal, -1e9)  # expect: AMP301
