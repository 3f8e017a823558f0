"""sentence-transformers mean pooling: the mask is .float(), so fp16 * fp32 promotes and the sums are float32."""
import torch
from transformers import AutoModel

encoder = AutoModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2", torch_dtype=torch.float16).cuda().eval()


@torch.no_grad()
def mean_pooling(input_ids, attention_mask):
    token_embeddings = encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
    input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
    summed = torch.sum(token_embeddings * input_mask_expanded, 1)
    counts = torch.clamp(input_mask_expanded.sum(1), min=1e-9)
    return summed / counts
