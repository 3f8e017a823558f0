"""Adam(eps=1e-8) over the parameters of a .half() model: eps rounds to 0 in float16."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).cuda().half()  # expect: AMP101
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-8)  # expect: AMP302
