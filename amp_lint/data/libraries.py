"""Functions and layers of libraries other than torch that model code calls on tensors, and how
their result's dtype follows from the call (an unlisted library call returns an unknown value).

Sources:
- einops 0.8 docs (https://einops.rocks/api/rearrange/, /api/repeat/, /api/einsum/,
  /api/layers/): ``rearrange`` and ``repeat`` reorder, reshape and tile the tensor (a view or a
  copy in its own dtype); ``einops.einsum(*tensors, pattern)`` calls the backend's ``einsum`` with the
  pattern moved first; ``einops.layers.torch.Rearrange`` is ``rearrange`` as an ``nn.Module``.
- xformers ``xformers/ops/fmha/__init__.py`` ``memory_efficient_attention(query, key, value, ...)``
  (output of the query's shape and dtype); flash-attn ``flash_attn/flash_attn_interface.py``
  (``flash_attn_func`` and its variants return the output in q's dtype, fp16/bf16 only).
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

#: a tensor of the first tensor argument's dtype (a reshape, or an attention kernel given q, k, v)
SAME_AS_FIRST = "same_as_first"
#: ``torch.einsum`` with the equation given last (``einops.einsum(x, y, "b i d, b j d -> b i j")``)
EINSUM_PATTERN_LAST = "einsum_pattern_last"

#: qualified name -> how the result follows (one of the kinds above)
FUNCTIONS: Dict[str, str] = {
    "einops.rearrange": SAME_AS_FIRST,
    "einops.repeat": SAME_AS_FIRST,
    "einops.einops.rearrange": SAME_AS_FIRST,
    "einops.einops.repeat": SAME_AS_FIRST,
    "einops.einsum": EINSUM_PATTERN_LAST,
    "xformers.ops.memory_efficient_attention": SAME_AS_FIRST,
    "xformers.ops.fmha.memory_efficient_attention": SAME_AS_FIRST,
    **{f"{package}.{name}": SAME_AS_FIRST
       for package in ("flash_attn", "flash_attn.flash_attn_interface")
       for name in ("flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func",
                    "flash_attn_varlen_qkvpacked_func", "flash_attn_kvpacked_func",
                    "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache")},
}
# Activation checkpointing (``torch.utils.checkpoint.checkpoint(fn, *args)`` returns ``fn(*args)``)
# is not followed: running ``fn`` there gave a false AMP202 in NVIDIA's BERT (a head class analysed
# with no caller received the half activations of another model's checkpointed encoder).

#: keywords that make an attention kernel return more than its output (``return_attn_probs=True``)
EXTRA_OUTPUT_KEYWORDS: FrozenSet[str] = frozenset({"return_attn_probs", "return_softmax_lse"})

#: layer classes (qualified) whose call returns a tensor of its input's dtype
MODULES: Dict[str, str] = {
    "einops.layers.torch.Rearrange": SAME_AS_FIRST,
}


#: functions that read a configuration file (a path, an open file, or its text) into its data:
#: ``OmegaConf.load(path)`` (omegaconf 2.3 docs, "Creating": from a YAML file), PyYAML's
#: ``safe_load``/``load``/``full_load``/``unsafe_load(stream)`` (a string or an open file) and
#: ``json.load(fp)``/``json.loads(s)`` (Python docs, json)
CONFIG_LOADERS: FrozenSet[str] = frozenset({
    "omegaconf.OmegaConf.load", "yaml.safe_load", "yaml.load", "yaml.full_load", "yaml.unsafe_load", "json.load",
    "json.loads",
})
#: functions that write a config's data (``json.dump(obj, fp)``, ``json.dumps(obj)``, PyYAML's
#: ``dump``/``safe_dump``; Python docs, json; PyYAML docs): a DeepSpeed config a program writes
#: for ``deepspeed.initialize(args=args)`` to read (BEiT-style ``create_ds_config(args)``)
CONFIG_WRITERS: FrozenSet[str] = frozenset({"json.dump", "json.dumps", "yaml.dump", "yaml.safe_dump"})
#: functions that give a config's data back with the same keys and values, read as attributes or
#: items (``OmegaConf.create(dict)``, ``OmegaConf.to_container(cfg)``, ``EasyDict(d)``, ``addict.Dict(d)``,
#: ``ml_collections.ConfigDict(d)``)
CONFIG_WRAPPERS: FrozenSet[str] = frozenset({
    "omegaconf.OmegaConf.create", "omegaconf.OmegaConf.to_container", "omegaconf.OmegaConf.to_object",
    "omegaconf.DictConfig", "easydict.EasyDict", "addict.Dict", "ml_collections.ConfigDict",
})

#: Command-line runners: ``fire.Fire(main)``, jsonargparse's ``CLI(setup)``/``auto_cli``,
#: ``typer.run(main)`` and ``tyro.cli(main)`` call the function they are given with the values of
#: the command line, each parameter's default where the command line leaves it out (python-fire's
#: guide "Using a Fire CLI"; jsonargparse docs "Functions as CLI"; typer docs "First steps"; tyro docs
#: "Functions"). jsonargparse, tyro and typer restrict a ``Literal[...]`` parameter to its choices.
CLI_RUNNERS: FrozenSet[str] = frozenset({
    "fire.Fire", "jsonargparse.CLI", "jsonargparse.cli.CLI", "jsonargparse.auto_cli", "typer.run", "tyro.cli",
})

#: Model registries of libraries: the decorator that registers a model-building function under its
#: own name -> the registry it fills. timm's ``register_model(fn)`` stores ``fn`` under
#: ``fn.__name__`` (``timm/models/_registry.py``; ``timm/models/registry.py`` before 0.9), so a
#: project's ``@register_model def poolformer_s12(pretrained=False, **kwargs)`` is what
#: ``create_model("poolformer_s12")`` builds.
MODEL_REGISTRATIONS: Dict[str, str] = {
    f"timm.models.{module}register_model": "timm" for module in ("", "registry.", "_registry.")
}
#: detectron2's class registries (``detectron2/utils/registry.py``, fvcore ``Registry``): a project
#: registers its meta-architectures, backbones and heads with ``@META_ARCH_REGISTRY.register()``, and
#: the library's builder builds the one the config names, ``REGISTRY.get(name)(cfg, ...)``
#: (``detectron2/modeling/meta_arch/build.py`` ``build_model(cfg)``, ``backbone/build.py``
#: ``build_backbone(cfg, input_shape=None)``, ``meta_arch/semantic_seg.py`` ``build_sem_seg_head``,
#: ``roi_heads/roi_heads.py`` ``build_roi_heads``, ``proposal_generator/build.py``
#: ``build_proposal_generator``). Keyed by the registry's and the builder's last name component, for a
#: name imported from ``detectron2.modeling`` or any module below it.
DETECTRON2_REGISTRIES: Dict[str, str] = {
    "META_ARCH_REGISTRY": "detectron2.meta_arch", "BACKBONE_REGISTRY": "detectron2.backbone",
    "SEM_SEG_HEADS_REGISTRY": "detectron2.sem_seg_head", "ROI_HEADS_REGISTRY": "detectron2.roi_heads",
    "PROPOSAL_GENERATOR_REGISTRY": "detectron2.proposal_generator",
}
DETECTRON2_BUILDERS: Dict[str, str] = {
    "build_model": "detectron2.meta_arch", "build_backbone": "detectron2.backbone",
    "build_sem_seg_head": "detectron2.sem_seg_head", "build_roi_heads": "detectron2.roi_heads",
    "build_proposal_generator": "detectron2.proposal_generator",
}
DETECTRON2_PACKAGE = "detectron2.modeling"
#: Registries a project makes for its own classes: fvcore's ``Registry(name)`` (and detectron2's,
#: which is fvcore's): ``@MODEL_REGISTRY.register()`` stores a class or function under its name
#: (or the name given), and ``MODEL_REGISTRY.get(name)`` returns it (``fvcore/common/registry.py``).
#: SlowFast-style ``build_model(cfg)`` is ``MODEL_REGISTRY.get(cfg.MODEL.MODEL_NAME)(cfg)``.
CLASS_REGISTRIES: FrozenSet[str] = frozenset({
    "fvcore.common.registry.Registry", "detectron2.utils.registry.Registry",
})
#: The factories that build a registered model by name -> the registry they read. timm's
#: ``create_model(model_name, pretrained=False, **kwargs)`` looks the name up and returns
#: ``create_fn(pretrained=pretrained, **kwargs)`` (``timm/models/_factory.py``; ``factory.py`` before
#: 0.9), after taking out the keywords it handles itself (:data:`MODEL_FACTORY_KEYWORDS`).
MODEL_FACTORIES: Dict[str, str] = {
    "timm.create_model": "timm",
    **{f"timm.models.{module}create_model": "timm" for module in ("", "factory.", "_factory.")},
}
#: keywords a model factory keeps for itself (the checkpoint it loads, TorchScript layer options)
MODEL_FACTORY_KEYWORDS: FrozenSet[str] = frozenset({
    "model_name", "checkpoint_path", "scriptable", "exportable", "no_jit", "cache_dir",
})
#: Library helpers that build a model class the caller passes: timm's
#: ``build_model_with_cfg(model_cls, variant, pretrained, ..., **kwargs)`` returns
#: ``model_cls(**kwargs)`` (``model_cls(cfg=model_cfg, **kwargs)`` where ``model_cfg`` is given),
#: after taking out the keywords it keeps for loading weights and feature extraction
#: (``timm/models/_builder.py``; ``helpers.py`` before 0.9). The positional arguments after the
#: class (variant, pretrained, the pretrained config) are never the model's.
MODEL_CLASS_BUILDERS: FrozenSet[str] = frozenset(
    f"timm.models.{module}build_model_with_cfg" for module in ("", "helpers.", "_builder.")
)
#: keywords :data:`MODEL_CLASS_BUILDERS` keep for themselves
MODEL_CLASS_BUILDER_KEYWORDS: FrozenSet[str] = frozenset({
    "variant", "pretrained", "default_cfg", "pretrained_cfg", "pretrained_cfg_overlay", "model_cfg",
    "feature_cfg", "pretrained_strict", "pretrained_filter_fn", "pretrained_custom_load", "kwargs_filter",
    "features_only", "feature_cls",
})
#: Hugging Face model classes whose checkpoints are stored in half precision, by the end of the
#: class name: ``from_pretrained(name, torch_dtype="auto")`` loads the dtype the checkpoint's
#: ``config.json`` records (transformers ``modeling_utils.py``, ``PreTrainedModel.from_pretrained``:
#: "auto" reads ``config.torch_dtype``, else the first floating weight's dtype). Causal language
#: models on the Hub are published in float16 or bfloat16 (OPT, LLaMA, BLOOM, Falcon, Mistral,
#: Qwen; GPT-2, from 2019, is float32): asking for "auto" on one is asking for its half weights.
HALF_CHECKPOINT_CLASS_SUFFIXES: Tuple[str, ...] = ("ForCausalLM",)
