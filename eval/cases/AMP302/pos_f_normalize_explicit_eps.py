"""F.normalize(..., eps=1e-12) on a tensor explicitly cast to half."""
import torch
import torch.nn.functional as F

queries = torch.randn(4096, 128).cuda().half()
unit = F.normalize(queries, p=2, dim=1, eps=1e-12)  # expect: AMP302
