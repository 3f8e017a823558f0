"""foreach=True does not help: the multi-tensor path also computes in the parameter dtype (NaN)."""
import torch
import torch.nn as nn

model = nn.Transformer(d_model=256, nhead=8, num_encoder_layers=2, num_decoder_layers=2).half()  # expect: AMP101
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, foreach=True)  # expect: AMP302
