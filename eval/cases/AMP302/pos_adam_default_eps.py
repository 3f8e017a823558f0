"""Adam with its default eps (1e-8) over float16 parameters."""
import torch
import torch.nn as nn

encoder = nn.LSTM(256, 512, num_layers=2, batch_first=True).cuda().half()  # expect: AMP101
optim = torch.optim.Adam(encoder.parameters(), lr=1e-3)  # expect: AMP302
