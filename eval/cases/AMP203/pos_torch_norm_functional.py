"""torch.norm over float16 gradients-like tensors created in half."""
import torch

update = torch.randn(4096, 4096, dtype=torch.float16, device="cuda") * 300
update_norm = torch.norm(update, p=2)  # expect: AMP203
