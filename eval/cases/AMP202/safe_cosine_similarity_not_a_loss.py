"""Half embeddings compared with a metric that is not a loss function: no loss call at all."""
import torch

emb_a = torch.randn(128, 768).cuda().half()
emb_b = torch.randn(128, 768).cuda().half()
hits = (emb_a @ emb_b.T).argmax(dim=-1) == torch.arange(128, device="cuda")
recall_at_1 = hits.float().mean().item()
