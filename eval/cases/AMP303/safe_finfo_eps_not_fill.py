"""torch.finfo(torch.float32).eps / .tiny used as numeric floors in float32 code, not as fill values."""
import torch

probs = torch.rand(16, 100)
safe_log = torch.log(probs.clamp(min=torch.finfo(torch.float32).tiny))
ratio = probs / (probs.sum(-1, keepdim=True) + torch.finfo(torch.float32).eps)
