"""eps=1e-4 over float16 parameters (the AMP302 fix); the pure-fp16 training itself is AMP101."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).half()  # expect: AMP101
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-4)
