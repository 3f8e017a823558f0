"""HF model in torch_dtype=torch.float16; the LM loss is computed by hand on the float16 logits."""
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", torch_dtype=torch.float16).cuda().eval()


@torch.no_grad()
def perplexity(input_ids):
    logits = model(input_ids).logits[:, :-1]
    labels = input_ids[:, 1:]
    nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))  # expect: AMP202
    return torch.exp(nll.float())
