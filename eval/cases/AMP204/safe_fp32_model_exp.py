"""No cast: VAE reparameterisation in float32."""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(512, 32)
        self.logvar = nn.Linear(512, 32)

    def forward(self, h):
        mu, logvar = self.mu(h), self.logvar(h)
        return mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)


enc = Encoder().cuda()
