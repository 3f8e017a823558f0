"""bfloat16 parameters: 1e-8 is representable in bf16, so not AMP302 (pure-bf16 training is AMP101)."""
import torch
import torch.nn as nn

model = nn.Linear(4096, 4096).cuda().bfloat16()  # expect: AMP101
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-8)
