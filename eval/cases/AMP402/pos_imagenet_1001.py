"""ImageNet + background: 1001 output classes."""
import torch.nn as nn

classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, 1001))  # expect: AMP402
classifier.half()  # trained in half precision: Tensor Cores run its GEMMs
