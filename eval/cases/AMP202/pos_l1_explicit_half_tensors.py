"""F.l1_loss on tensors explicitly cast with .half()."""
import torch
import torch.nn.functional as F

pred = torch.rand(8, 3, 256, 256).cuda().half()
target = torch.rand(8, 3, 256, 256).cuda().half()
l1 = F.l1_loss(pred * 255, target * 255, reduction="sum")  # expect: AMP202
