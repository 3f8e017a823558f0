"""max/amax/argmax on float16 values: exact in any precision, not in the rule's list."""
import torch
import torch.nn as nn

head = nn.Linear(1024, 1000).cuda().half()
feats = torch.randn(32, 1024, device="cuda").half()
logits = head(feats)
row_max = logits.amax(dim=-1, keepdim=True)
best, idx = logits.max(dim=-1)
pred = logits.argmax(dim=-1)
