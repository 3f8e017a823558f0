"""No cast anywhere: a float32 regression model evaluated with nn.MSELoss."""
import torch
import torch.nn as nn

model = nn.Linear(20, 1)
criterion = nn.MSELoss()

with torch.no_grad():
    x, y = torch.randn(64, 20), torch.randn(64, 1)
    val_loss = criterion(model(x), y)
