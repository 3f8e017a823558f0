"""F.layer_norm / F.group_norm / F.rms_norm with eps=1e-12 on float16: native kernels keep eps in fp32."""
import torch
import torch.nn.functional as F

x = torch.randn(8, 64, 32, 32, device="cuda").half()
y = F.group_norm(x, 32, eps=1e-12)
z = F.layer_norm(x, x.shape[-1:], eps=1e-12)
r = F.rms_norm(x, x.shape[-1:], eps=1e-12)
