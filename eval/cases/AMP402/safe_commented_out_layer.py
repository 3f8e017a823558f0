"""A misaligned layer that only appears in a comment and a string."""
import torch.nn as nn

# self.proj = nn.Linear(768, 300)
DOC = "use nn.Linear(768, 300) for GloVe projections"
proj = nn.Linear(768, 256)
