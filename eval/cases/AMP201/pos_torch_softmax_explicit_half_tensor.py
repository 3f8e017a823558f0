"""torch.softmax on a tensor explicitly cast to float16."""
import torch

logits = torch.randn(32, 1000).cuda().half()
probs = torch.softmax(logits, dim=-1)  # expect: AMP201
top5 = probs.topk(5, dim=-1)
