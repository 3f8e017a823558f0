"""AMP401 unpadded-vocab."""
from __future__ import annotations

import ast
from typing import List, Optional, Set

import libcst as cst

from amp_lint.data.tensor_cores import ALIGNMENT, EMBEDDING, SUGGESTED_VOCAB_MULTIPLE, round_up
from amp_lint.engine.fixes import CstFix
from amp_lint.engine.fixing import FixContext, FixPlan
from amp_lint.findings import Applicability, Severity
from amp_lint.rules._layers import LayerDim, is_vocab_dim, layer_dims, runs_in_half, sizes_text, weight_owners
from amp_lint.rules._numerics import callee_name
from amp_lint.rules.base import Invalid, Rule, Valid
from amp_lint.semantics.values import ClassVal, FuncVal, Module, options

_PROJECTIONS = ("torch.nn.functional.linear", "torch.matmul", "torch.mm", "torch.einsum")


class UnpaddedVocab(Rule):
    code = "AMP401"
    name = "unpadded-vocab"
    severity = Severity.PERF
    summary = "Vocabulary-sized GEMM dimension not a multiple of 8"
    fix_applicability = Applicability.UNSAFE
    tokens = ("Linear", "Embedding")  # a tied embedding is always an nn.Embedding
    docs = """
    ## What it does
    Finds a language-model head `nn.Linear(d, V)` (or an `nn.Embedding(V, d)` whose weight is tied
    to the output projection, also by a helper class that stores the weight it is handed) whose
    vocabulary size `V` is statically known - a literal, a module constant, simple arithmetic, an
    argparse `default=`, a dataclass/config default - and is not a multiple of 8. When the calls that build the model give different known sizes, each is
    checked.

    ## Why is this bad?
    The LM head is usually the largest GEMM of the model. fp16/bf16 Tensor Core kernels want every
    GEMM dimension aligned to 8 elements (16 bytes); a vocabulary of 50257 (GPT-2) runs the head
    on slower paths. nanoGPT pads it to 50304 (a multiple of 64) for a measurable speed-up;
    Megatron-LM pads to a multiple of 128. A plain `nn.Embedding` lookup is a gather, not a GEMM,
    so an untied embedding is not reported.

    ## Fix safety
    The fix pads the single literal that defines `V` up to the next multiple of 64. It is unsafe:
    parameter shapes change (old checkpoints no longer load without padding) and the extra logits
    must never be targets (they learn to stay low).

    ## References
    - https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html
    - https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html
    - karpathy/nanoGPT `model.py` (`vocab_size: int = 50304`)
    """
    VALID = [
        Valid("""
        from torch import nn
        lm_head = nn.Linear(768, 50304, bias=False)
        """),
        Valid("""
        import torch.nn as nn
        emb = nn.Embedding(50257, 768)
        """),
        Valid("""
        # Tensor Cores matter only in fp16/bf16: a model that never runs in half is not reported
        import torch.nn as nn
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.lm_head = nn.Linear(768, 50257)
        lm = LM()
        """),
        Valid("""
        # a helper handed the embedding weight only initialises it: no tie, and a lookup is no GEMM
        import torch.nn as nn
        def init_rows(weight):
            nn.init.normal_(weight, std=0.02)
        class Tagger(nn.Module):
            def __init__(self, n_vocab=30523, width=256):
                super().__init__()
                self.tok_embed = nn.Embedding(n_vocab, width)
                init_rows(self.tok_embed.weight)
                self.out = nn.Linear(width, 9)
            def forward(self, ids):
                return self.out(self.tok_embed(ids))
        tagger = Tagger().half()
        """),
        Valid("""
        import torch.nn as nn
        class Cfg:
            vocab_size = 50257
        def build(cfg, vocab_size):
            return nn.Linear(768, vocab_size)
        """),
        Valid("""
        # a token-type table is named like a vocabulary but no head is tied to it
        import torch.nn as nn
        class Cfg:
            vocab_size, type_vocab_size, hidden = 30528, 2, 768
        class Embeddings(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden)
                self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden)
        class MaskedLM(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.embeddings = Embeddings(cfg)
                self.decoder = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)
                self.decoder.weight = self.embeddings.word_embeddings.weight
            def forward(self, ids, types):
                e = self.embeddings
                return self.decoder(e.word_embeddings(ids) + e.token_type_embeddings(types))
        model = MaskedLM(Cfg()).half()
        """),
    ]
    INVALID = [
        Invalid(
            """
            from dataclasses import dataclass
            import torch.nn as nn

            @dataclass
            class GPTConfig:
                vocab_size: int = 50257
                n_embd: int = 768

            class GPT(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.wte = nn.Embedding(config.vocab_size, config.n_embd)
                    self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
                    self.wte.weight = self.lm_head.weight

            model = GPT(GPTConfig()).half()
            """,
            expected="""
            from dataclasses import dataclass
            import torch.nn as nn

            @dataclass
            class GPTConfig:
                vocab_size: int = 50304
                n_embd: int = 768

            class GPT(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.wte = nn.Embedding(config.vocab_size, config.n_embd)
                    self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
                    self.wte.weight = self.lm_head.weight

            model = GPT(GPTConfig()).half()
            """,
        ),
        Invalid(
            """
            import argparse
            from torch import nn
            parser = argparse.ArgumentParser()
            parser.add_argument("--vocab-size", type=int, default=32001)
            args = parser.parse_args()
            head = nn.Linear(512, args.vocab_size)
            head.half()
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            VOCAB = 30000 + 522
            class LM(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lm_head = nn.Linear(256, VOCAB)
            lm = LM().half()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            SPEECH_TOKENS = 1024
            class Decoder(nn.Module):
                def __init__(self, d=512):
                    super().__init__()
                    self.predict = nn.Linear(d, SPEECH_TOKENS + 1)
                def forward(self, h):
                    return self.predict(h)
            with torch.autocast("cuda"):
                logits = Decoder()(torch.randn(2, 512))
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F
            class LM(nn.Module):
                def __init__(self, ntoken=33708, d=512):
                    super().__init__()
                    self.embed = nn.Embedding(ntoken, d)
                def forward(self, h):
                    return F.linear(h, self.embed.weight)
            lm = LM().half()
            """,
            expected="""
            import torch.nn as nn
            import torch.nn.functional as F
            class LM(nn.Module):
                def __init__(self, ntoken=33728, d=512):
                    super().__init__()
                    self.embed = nn.Embedding(ntoken, d)
                def forward(self, h):
                    return F.linear(h, self.embed.weight)
            lm = LM().half()
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn
            class TextDecoder(nn.Module):
                def __init__(self, n_state=512):
                    super().__init__()
                    self.token_embedding = nn.Embedding(51865, n_state)
                def forward(self, x):
                    return x @ torch.transpose(self.token_embedding.weight, 0, 1)
            decoder = TextDecoder().half()
            """,
        ),
        Invalid(
            """
            # the head class ties the embedding weight it is handed
            import torch.nn as nn
            class TiedHead(nn.Module):
                def __init__(self, embedding_weight):
                    super().__init__()
                    rows, width = embedding_weight.shape
                    self.out = nn.Linear(width, rows, bias=False)
                    self.out.weight = embedding_weight
                def forward(self, h):
                    return self.out(h)
            class Speller(nn.Module):
                def __init__(self, n_vocab=30523, width=256):
                    super().__init__()
                    self.tok_embed = nn.Embedding(n_vocab, width)
                    self.head = TiedHead(self.tok_embed.weight)
                def forward(self, ids):
                    return self.head(self.tok_embed(ids))
            speller = Speller().half()
            """,
            expected="""
            # the head class ties the embedding weight it is handed
            import torch.nn as nn
            class TiedHead(nn.Module):
                def __init__(self, embedding_weight):
                    super().__init__()
                    rows, width = embedding_weight.shape
                    self.out = nn.Linear(width, rows, bias=False)
                    self.out.weight = embedding_weight
                def forward(self, h):
                    return self.out(h)
            class Speller(nn.Module):
                def __init__(self, n_vocab=30528, width=256):
                    super().__init__()
                    self.tok_embed = nn.Embedding(n_vocab, width)
                    self.head = TiedHead(self.tok_embed.weight)
                def forward(self, ids):
                    return self.head(self.tok_embed(ids))
            speller = Speller().half()
            """,
        ),
        Invalid(
            """
            # one of the two tokenizers the builder picks has a misaligned vocabulary
            import torch
            import torch.nn as nn
            class Decoder(nn.Module):
                def __init__(self, vocab_size):
                    super().__init__()
                    self.lm_head = nn.Linear(512, vocab_size)
                def forward(self, h):
                    return self.lm_head(h)
            def build(tokenizer):
                if tokenizer == "sentencepiece":
                    return Decoder(32000)
                return Decoder(50257)
            def generate(tokenizer, h):
                with torch.autocast("cuda"):
                    return build(tokenizer)(h)
            """,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.heads: List[LayerDim] = []
        self.embeddings: List[LayerDim] = []
        #: owners whose ``.weight`` serves as an output projection (``F.linear(h, emb.weight)``,
        #: ``h @ emb.weight.T``, ``head.weight = emb.weight``)
        self.tied: Set[str] = set()
        #: a helper ties weights it is handed (``self.decoder.weight = embedding_weights``, a parameter)
        self.ties_a_parameter = False
        #: owners whose ``.weight`` is handed to project code (``Head(self.wte.weight, config)``)
        self.handed_weights: Set[str] = set()

    def visit_Call(self, node: ast.Call) -> None:
        for dim in layer_dims(self.ctx, node):
            if dim.layer == EMBEDDING:
                self.embeddings.append(dim)
            elif is_vocab_dim(self.ctx, dim):
                self.heads.append(dim)
        observations = self.ctx.observations(node)
        names = {callee_name(obs, node) for obs in observations}
        for name in names & set(_PROJECTIONS):
            for arg in node.args[1:] if name == "torch.nn.functional.linear" else node.args:
                self.tied.update(weight_owners(arg))
        if any(_is_project_callable(option) for obs in observations for option in options(obs.value(node.func))):
            for arg in list(node.args) + [kw.value for kw in node.keywords]:
                if isinstance(arg, ast.Attribute) and arg.attr == "weight":
                    self.handed_weights.add(ast.unparse(arg.value))

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self.tied.update(weight_owners(node.right))

    def visit_Assign(self, node: ast.Assign) -> None:
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Attribute) and target.attr == "weight" \
                and isinstance(value, ast.Attribute) and value.attr == "weight":
            self.tied.update({ast.unparse(target.value), ast.unparse(value.value)})
        elif isinstance(target, ast.Attribute) and target.attr == "weight" and isinstance(value, ast.Name):
            function = self.ctx.enclosing(ast.FunctionDef, ast.AsyncFunctionDef)
            spec = function.args if function is not None else None  # type: ignore[attr-defined]
            if spec is not None and value.id in {a.arg for a in spec.posonlyargs + spec.args + spec.kwonlyargs}:
                self.ties_a_parameter = True

    def finish(self) -> None:
        if self.ties_a_parameter:  # the weights handed to project code may be the ones it ties
            self.tied.update(self.handed_weights)
        head_sizes: Set[int] = set()
        for dim in self.heads:
            head_sizes.update(self._check(dim, "LM-head"))
        for dim in self.embeddings:
            tied = dim.target in self.tied or (bool(self.tied) and is_vocab_dim(self.ctx, dim))
            if not tied or dim.role != "in" or not dim.sizes() or dim.sizes() <= head_sizes:
                continue
            self._check(dim, "tied embedding")

    def _check(self, dim: LayerDim, what: str) -> Set[int]:
        """Report ``dim`` when a size it has is misaligned; the sizes it has."""
        misaligned = [(size, where) for size, where in dim.misaligned(ALIGNMENT) if size > 0]
        if not misaligned or not runs_in_half(self.ctx, dim):
            return dim.sizes()
        plan = None
        literal = dim.literal
        if dim.value is not None and literal is not None:
            padded = round_up(dim.value, SUGGESTED_VOCAB_MULTIPLE)
            plan = FixPlan(f"Pad the vocabulary to {padded}", Applicability.UNSAFE,
                           lambda fctx: _replace_literal(fctx, literal, padded, f"Pad the vocabulary to {padded}"))
        sizes, padded_text = sizes_text(misaligned, lambda size: round_up(size, SUGGESTED_VOCAB_MULTIPLE))
        self.report(
            dim.call,
            f"Vocabulary size {sizes} of this {what} is not a multiple of {ALIGNMENT}; "
            f"pad it to {padded_text} (a multiple of {SUGGESTED_VOCAB_MULTIPLE}) for Tensor Core GEMMs",
            fix=plan,
        )
        return dim.sizes()


def _is_project_callable(value: object) -> bool:
    """A class or function of the analysed project (or an instance of a project nn.Module)."""
    return isinstance(value, (ClassVal, FuncVal)) or isinstance(value, Module) and isinstance(value.cls, ClassVal)


def _replace_literal(fctx: FixContext, literal: ast.AST, value: int, title: str) -> Optional[CstFix]:
    node = fctx.node(literal)
    if not isinstance(node, cst.Integer):
        return None
    fix = CstFix(title, Applicability.UNSAFE)
    fix.replace(node, cst.Integer(str(value)))
    return fix
