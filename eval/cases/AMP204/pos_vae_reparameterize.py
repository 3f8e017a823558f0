"""VAE reparameterisation: exp of the log-variance in a model cast with .half()."""
import torch
import torch.nn as nn


class VAE(nn.Module):
    def __init__(self, in_dim=784, latent=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(in_dim, 512), nn.ReLU())
        self.mu = nn.Linear(512, latent)
        self.logvar = nn.Linear(512, latent)
        self.dec = nn.Sequential(nn.Linear(latent, 512), nn.ReLU(), nn.Linear(512, in_dim), nn.Sigmoid())

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        std = torch.exp(0.5 * logvar)  # expect: AMP204
        z = mu + std * torch.randn_like(std)
        return self.dec(z), mu, logvar


vae = VAE().cuda().half()
