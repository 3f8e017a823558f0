"""Energy-based rescoring: exp of float16 logits from a torch_dtype=torch.float16 model."""
import torch
from transformers import AutoModelForSequenceClassification

reranker = AutoModelForSequenceClassification.from_pretrained(
    "cross-encoder/ms-marco-MiniLM-L-6-v2", torch_dtype=torch.float16
).cuda().eval()


@torch.no_grad()
def scores(batch):
    logits = reranker(**batch).logits.squeeze(-1)
    return torch.exp(logits / 0.1)  # expect: AMP204
