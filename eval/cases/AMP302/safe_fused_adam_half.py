"""fused=True Adam computes in fp32 internally: not AMP302 (the pure-fp16 training itself is still AMP101)."""
import torch
import torch.nn as nn

model = nn.Linear(1024, 1024).cuda().half()  # expect: AMP101
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-8, fused=True)
