"""Masked mean pooling with the mask cast to the half hidden-state dtype: sums in float16."""
import torch
from transformers import AutoModel

encoder = AutoModel.from_pretrained("sentence-transformers/all-mpnet-base-v2", torch_dtype=torch.float16).cuda().eval()


@torch.no_grad()
def embed(input_ids, attention_mask):
    token_embeddings = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)
    summed = (token_embeddings * mask).sum(dim=1)  # expect: AMP203
    counts = attention_mask.sum(dim=1, keepdim=True).clamp(min=1)
    return summed / counts
