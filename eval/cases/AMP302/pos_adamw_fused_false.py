"""AdamW(fused=False, eps=1e-8) over a .half() model."""
import torch
import torch.nn as nn

head = nn.Linear(1024, 1024).cuda().half()  # expect: AMP101
optimizer = torch.optim.AdamW(head.parameters(), lr=1e-4, eps=1e-8, fused=False)  # expect: AMP302
