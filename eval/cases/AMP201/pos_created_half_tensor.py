"""Tensor created directly in float16 (dtype=torch.float16) and normalised with softmax."""
import torch

scores = torch.zeros(16, 4096, dtype=torch.float16, device="cuda")
scores[:, :10] = 5.0
weights = scores.softmax(-1)  # expect: AMP201
