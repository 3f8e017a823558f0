"""Tensor Core alignment facts (NVIDIA "Matrix Multiplication Background User's Guide",
https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html,
section Tensor Core Requirements; PyTorch Performance Tuning Guide,
https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html): fp16/bf16 GEMM dims want
multiples of 8 elements (16 bytes); multiples of 64 are best on A100 and are what nanoGPT pads its
vocabulary to."""

ALIGNMENT = 8
SUGGESTED_VOCAB_MULTIPLE = 64

#: Constructors whose (in, out) sizes become GEMM dims: qualified name -> (in param, out param).
GEMM_LAYERS = {
    "torch.nn.Linear": ("in_features", "out_features"),
    "torch.nn.Conv1d": ("in_channels", "out_channels"),
    "torch.nn.Conv2d": ("in_channels", "out_channels"),
    "torch.nn.Conv3d": ("in_channels", "out_channels"),
    "torch.nn.ConvTranspose1d": ("in_channels", "out_channels"),
    "torch.nn.ConvTranspose2d": ("in_channels", "out_channels"),
    "torch.nn.ConvTranspose3d": ("in_channels", "out_channels"),
}
EMBEDDING = "torch.nn.Embedding"

#: Substrings of an expression or target name that mark a vocabulary-sized dimension.
VOCAB_HINTS = ("vocab", "ntoken", "n_token", "num_token", "n_vocab", "num_classes_vocab", "_tokens")
#: Substrings that mark a small table named like a vocabulary that no LM head is tied to: BERT's
#: token-type (segment) embeddings (``type_vocab_size`` = 2) and position tables.
NOT_VOCAB_HINTS = ("type_vocab", "token_type", "segment", "position")
#: Attribute names an LM head is usually assigned to.
LM_HEAD_TARGETS = ("lm_head", "output_projection", "decoder", "generator", "to_logits", "logits")


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple
