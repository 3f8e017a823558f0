"""Logits processor on a torch_dtype=torch.float16 model's logits, banning tokens with finfo(float32).min."""
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16).cuda().eval()


@torch.no_grad()
def next_token(input_ids, banned_mask):
    logits = model(input_ids).logits[:, -1, :]
    logits = logits.masked_fill(banned_mask, torch.finfo(torch.float32).min)  # expect: AMP303
    return logits.argmax(dim=-1)
