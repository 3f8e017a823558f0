"""Names the training-loop analysis recognises: optimizers, schedulers, clipping, loss scalers,
master-weight wrappers and apex opt levels.

Sources: torch 2.13 ``torch/optim/__init__.py`` and ``torch/optim/lr_scheduler.py`` (public
classes), ``torch/nn/utils/clip_grad.py``, ``torch/amp/grad_scaler.py``,
``torch/distributed/fsdp/sharded_grad_scaler.py``; fairseq ``fairseq/optim/fp16_optimizer.py``
(``FP16Optimizer``, ``MemoryEfficientFP16Optimizer``); apex 0.1 ``apex/amp/frontend.py``
(opt levels O0-O3, removed from apex in May 2025, commit cb65b8ed); DeepSpeed
``deepspeed/runtime/fp16/fused_optimizer.py``; Megatron-LM ``megatron/core/optimizer``.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Optional, Tuple

#: Qualified names of the standard optimizers: they update parameters in their own dtype.
OPTIMIZERS: FrozenSet[str] = frozenset(
    f"torch.optim.{name}"
    for name in (
        "SGD", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "RMSprop", "Rprop", "NAdam",
        "RAdam", "ASGD", "LBFGS", "SparseAdam", "Adafactor", "Muon",
    )
) | frozenset({"torch.optim.sgd.SGD", "torch.optim.adam.Adam", "torch.optim.adamw.AdamW"})

#: Prefixes of learning-rate schedulers (their ``step()`` is not an optimizer step).
SCHEDULER_PREFIXES = ("torch.optim.lr_scheduler.", "transformers.get_", "transformers.optimization.")

#: Gradient clipping: functions (qualified) and method names (FSDP, accelerate, Lightning).
CLIP_FUNCTIONS: FrozenSet[str] = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_",
        "torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_value_", "torch.nn.utils.get_total_norm",
    }
)
CLIP_METHODS: FrozenSet[str] = frozenset({"clip_grad_norm_", "clip_grad_value_"})

#: Loss scalers (construction qualified names).
GRAD_SCALERS: FrozenSet[str] = frozenset(
    {
        "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.cuda.amp.GradScaler",
        "torch.cpu.amp.GradScaler", "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
    }
)

#: Library loss scalers a training step calls as ``scaler(loss, optimizer, clip_grad=..., parameters=...)``:
#: each scales the loss, runs backward, (unscales and clips,) steps the optimizer and updates the scale.
#: timm ``timm/utils/cuda.py`` (re-exported by ``timm.utils``): ``NativeScaler`` over a
#: ``torch.cuda.amp.GradScaler``, ``ApexScaler`` over apex's ``amp.scale_loss``.
LIBRARY_LOSS_SCALERS: FrozenSet[str] = frozenset({
    "timm.utils.NativeScaler", "timm.utils.cuda.NativeScaler", "timm.utils.ApexScaler", "timm.utils.cuda.ApexScaler",
})

#: Collectives that gather a tensor from every rank (torch 2.13 ``torch/distributed/distributed_c10d.py``
#: ``all_gather(tensor_list, tensor)`` fills the list in place; ``torch/distributed/nn/functional.py``
#: ``all_gather(tensor)`` returns a tuple): each gathered tensor is the same kind of value as the one given.
GATHER_INTO_LIST: FrozenSet[str] = frozenset({
    "torch.distributed.all_gather", "torch.distributed.distributed_c10d.all_gather",
})
GATHER_RETURNING: FrozenSet[str] = frozenset({
    "torch.distributed.nn.all_gather", "torch.distributed.nn.functional.all_gather",
})

#: Calls that print, inspect, save or export a model given to them (``print(model)``,
#: ``torch.save(model, path)``, ``torch.onnx.export`` of an inference model) and run no training or
#: evaluation with it; ``LOGGING_METHODS``: ``logger.info(model)`` and its kin.
MODEL_SHOWING_CALLS: FrozenSet[str] = frozenset({
    "print", "len", "repr", "str", "id", "type", "isinstance", "hasattr", "getattr", "setattr", "vars", "dir",
    "torch.save", "torch.onnx.export", "torch.jit.save",
})
LOGGING_METHODS: FrozenSet[str] = frozenset({"info", "debug", "warning", "warn", "error", "log"})

#: The GradScaler methods of the loss-scaling protocol, in the order a training step calls them
#: (``unscale_`` only before clipping or inspecting gradients); torch 2.13 ``torch/amp/grad_scaler.py``.
SCALER_METHODS = ("scale", "unscale_", "step", "update")

#: Autocast context managers (qualified) -> the device they imply (None: given as argument).
AUTOCASTS: Dict[str, Optional[str]] = {
    "torch.autocast": None,
    "torch.amp.autocast": None,
    "torch.amp.autocast_mode.autocast": None,
    "torch.cuda.amp.autocast": "cuda",
    "torch.cpu.amp.autocast": "cpu",
}
#: Autocast's default dtype per device type (torch 2.13 ``torch/amp/autocast_mode.py``).
AUTOCAST_DEFAULT_DTYPE: Dict[str, str] = {"cuda": "float16", "cpu": "bfloat16", "xpu": "float16", "mps": "float16"}

#: Optimizer wrappers that keep fp32 master weights (an fp16 model under them trains correctly).
#: Matched on the constructor's last name component, so a hand-written copy counts too.
MASTER_WEIGHT_WRAPPERS: FrozenSet[str] = frozenset(
    {
        "FP16Optimizer", "MemoryEfficientFP16Optimizer", "FP16_Optimizer", "FusedFP16Optimizer",
        "FP16_UnfusedOptimizer", "MixedPrecisionOptimizer", "Float16OptimizerWithFloat16Params",
        "KahanSummationOptimizer", "AnyPrecisionAdamW", "DeepSpeedEngine",
    }
)
#: Calls (qualified) that take an optimizer and keep fp32 master weights for it (apex O1/O2,
#: DeepSpeed's engine).
MASTER_WEIGHT_BUILDERS: FrozenSet[str] = frozenset({"apex.amp.initialize", "deepspeed.initialize"})
#: Packages known by name whose effects their source does not show (apex's ``amp.initialize``
#: patches torch and the model's forward at run time): a copy vendored in the repository is still
#: that library, so a run gives the same findings from inside the repository and from above it.
KNOWN_BY_NAME: FrozenSet[str] = frozenset({"apex"})
#: Libraries whose calls the analysis knows by name (their builders, trainers, optimizers): a copy a
#: repository vendors as a sub-project with its own ``setup.py`` (``det/setup.py`` beside
#: ``det/detectron2``) is not taken for that sub-project's package, which the scripts beside it
#: import the installed library as (the import roots of :mod:`amp_lint.semantics.program`).
MODELLED_LIBRARIES: FrozenSet[str] = frozenset({
    "apex", "accelerate", "deepspeed", "detectron2", "fairseq", "lightning", "pytorch_lightning", "timm",
    "transformers",
})
#: Calls that wrap model+optimizer into an engine with its own loss scaling (DeepSpeed).
ENGINE_INITIALIZERS: FrozenSet[str] = frozenset({"deepspeed.initialize"})

#: Mixed-precision configurations of distributed wrappers and trainers: a script that builds one
#: already trains in mixed precision (FSDP1 ``MixedPrecision``, FSDP2 ``MixedPrecisionPolicy``,
#: Hugging Face accelerate's ``Accelerator(mixed_precision=...)``).
MIXED_PRECISION_CONFIGS: FrozenSet[str] = frozenset({
    "torch.distributed.fsdp.MixedPrecision",
    "torch.distributed.fsdp.MixedPrecisionPolicy",
    "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision",
    "torch.distributed._composable.fsdp.MixedPrecisionPolicy",
    "accelerate.Accelerator",
})

#: Dtype names (last attribute) meaning half precision.
HALF_DTYPES: Dict[str, str] = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16"}
#: Tensor/Module methods that cast wholesale.
HALF_METHODS: Dict[str, str] = {"half": "float16", "bfloat16": "bfloat16"}

#: apex ``opt_level`` -> what native AMP replaces it with (autocast dtype, or None: plain fp32).
#: O1: patch functions to cast (== autocast fp16); O2: fp16 model + fp32 master weights
#: (== fp32 model + autocast fp16); O3: pure fp16 (no master weights; native AMP is the fix).
APEX_OPT_LEVELS: Dict[str, Optional[str]] = {"O0": None, "O1": "float16", "O2": "float16", "O3": "float16"}

#: Layers with no float16 *training* kernel under CPU autocast: the migrated script would crash
#: when run with device "cpu" (torch 2.13.0+cpu, oneDNN v3.12: "could not create a primitive
#: descriptor for the LSTM forward propagation primitive"; see fixtures/training/lstm_tagger.py).
CPU_FP16_AUTOCAST_TRAINING_UNSUPPORTED: FrozenSet[str] = frozenset({"torch.nn.LSTM"})

#: Ops that CUDA (and XPU) autocast refuses: "torch.nn.functional.binary_cross_entropy and
#: torch.nn.BCELoss are unsafe to autocast." (pytorch/pytorch
#: ``aten/src/ATen/autocast_mode.cpp``, ``binary_cross_entropy_banned``). A script using them would crash once migrated and run on a GPU.
AUTOCAST_BANNED: FrozenSet[str] = frozenset({
    "torch.nn.functional.binary_cross_entropy", "torch.nn.BCELoss", "torch.binary_cross_entropy",
})

#: Base classes (last name component) whose subclasses are nn.Modules (torch.nn.Module itself is
#: recognised by its module path): Hugging Face, Lightning, timm, fairseq, mmcv.
MODEL_BASES: FrozenSet[str] = frozenset({
    "PreTrainedModel", "LightningModule", "ModelMixin", "BaseFairseqModel", "FairseqEncoder", "FairseqDecoder",
    "FairseqIncrementalDecoder", "FairseqEncoderDecoderModel", "FairseqLanguageModel", "BaseModule", "Module",
})
#: Capitalised library names that are most likely models when instantiated (``timm.create_model``
#: is not a class; ``SomeLib.ResNet`` is).
MODEL_CLASS_HINTS = ("Model", "Net", "Transformer", "Encoder", "Decoder", "Bert", "GPT", "Llama", "ResNet", "ViT",
                     "CLIP", "UNet", "Unet", "ForCausalLM", "ForSequenceClassification", "ForMaskedLM")
#: Context managers that change nothing about precision.
NULL_CONTEXTS: FrozenSet[str] = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
    "contextlib.nullcontext", "contextlib.suppress", "torch.autograd.no_grad", "torch.autograd.set_detect_anomaly",
    "torch.autograd.detect_anomaly", "torch.cuda.device", "torch.autograd.profiler.profile",
    "torch.profiler.profile", "torch.profiler.record_function", "torch.backends.cuda.sdp_kernel",
    "torch.nn.attention.sdpa_kernel",
})
#: Context managers (and decorators) under which no autograd graph is recorded: what is computed
#: there carries no gradient back through its half ops.
NO_GRAD_CONTEXTS: FrozenSet[str] = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                                              "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})
#: FSDP mixed-precision configurations (``param_dtype=`` casts parameters for compute, fp32 kept).
FSDP_MIXED_PRECISION: FrozenSet[str] = frozenset({
    "torch.distributed.fsdp.MixedPrecision", "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision",
    "torch.distributed.fsdp.MixedPrecisionPolicy", "torch.distributed._composable.fsdp.MixedPrecisionPolicy",
})
APEX_INITIALIZE: FrozenSet[str] = frozenset({"apex.amp.initialize", "apex.amp.frontend.initialize"})
DEEPSPEED_INITIALIZE: FrozenSet[str] = frozenset({"deepspeed.initialize"})
#: Sections of a DeepSpeed config whose ``"enabled": true`` casts the engine's model, and the dtype
#: (DeepSpeed ``runtime/engine.py`` ``_configure_distributed_model``: ``module.half()`` /
#: ``module.bfloat16()``; ``runtime/constants.py``: ``"bfloat16"`` is an alias of ``"bf16"``).
DEEPSPEED_HALF_SECTIONS: Tuple[Tuple[str, str], ...] = (("fp16", "float16"), ("bf16", "bfloat16"),
                                                       ("bfloat16", "bfloat16"))
#: Keys that make a JSON file a DeepSpeed config (``runtime/constants.py``).
DEEPSPEED_CONFIG_KEYS: Tuple[str, ...] = ("train_batch_size", "train_micro_batch_size_per_gpu",
                                          "gradient_accumulation_steps", "zero_optimization", "steps_per_print")
#: Hugging Face accelerate / Lightning Fabric objects that own mixed precision (last name component).
ACCELERATORS: FrozenSet[str] = frozenset({"Accelerator", "Fabric"})
LIGHTNING_TRAINERS: FrozenSet[str] = frozenset({"Trainer"})
DATALOADERS: FrozenSet[str] = frozenset({"DataLoader"})

#: Objects that own mixed precision when built with one of the keywords: last name component ->
#: (kind, keywords). Hugging Face accelerate ``Accelerator(mixed_precision=...)``, Lightning
#: ``Trainer``/``Fabric(precision=...)``, transformers ``TrainingArguments(fp16=/bf16=)``.
FRAMEWORK_PRECISION: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "Accelerator": ("accelerator", ("mixed_precision",)),
    "Fabric": ("lightning", ("precision",)),
    "Trainer": ("lightning", ("precision",)),
    "TrainingArguments": ("hf_trainer", ("fp16", "bf16", "half_precision_backend")),
    "Seq2SeqTrainingArguments": ("hf_trainer", ("fp16", "bf16")),
    "SFTConfig": ("hf_trainer", ("fp16", "bf16")),
}
#: Trainers that run the model's forward under CUDA autocast each step, with a GradScaler:
#: detectron2's ``AMPTrainer(model, data_loader, optimizer, ..., precision=torch.float16)``
#: (``detectron2/engine/train_loop.py``: ``with autocast(dtype=self.precision): loss_dict =
#: self.model(data)``). Its ``SimpleTrainer`` runs the model in float32.
AUTOCAST_TRAINERS: FrozenSet[str] = frozenset({"detectron2.engine.AMPTrainer", "detectron2.engine.train_loop.AMPTrainer"})
#: Lightning precisions that cast the model itself (``plugins/precision/half.py``, ``HalfPrecision``):
#: name -> dtype. ``"16-mixed"``/``"bf16-mixed"`` run autocast over an fp32 model instead.
FABRIC_TRUE_PRECISION: Dict[str, str] = {"16-true": "float16", "bf16-true": "bfloat16"}
#: Lightning precisions that run autocast around the forward (``plugins/precision/amp.py``,
#: ``MixedPrecision``; ``16`` and ``"bf16"`` are the names of Lightning 1.x).
FABRIC_MIXED_PRECISION: Dict[object, str] = {"16-mixed": "float16", "bf16-mixed": "bfloat16", 16: "float16",
                                             "16": "float16", "bf16": "bfloat16"}
#: Lightning ``Trainer`` loops and the ``LightningModule`` hooks each runs on the model it is given
#: (``fit`` trains and validates; ``pytorch_lightning/loops/``), under the Trainer's precision:
#: autocast at a mixed precision (``plugins/precision/amp.py``, ``MixedPrecision.forward_context``).
LIGHTNING_LOOP_HOOKS: Dict[str, Tuple[str, ...]] = {
    "fit": ("training_step", "validation_step"), "validate": ("validation_step",),
    "test": ("test_step",), "predict": ("predict_step",),
}
#: Lightning precisions that run in float32 (no autocast, no cast).
LIGHTNING_FULL_PRECISION: FrozenSet[object] = frozenset({32, "32", "32-true", 64, "64", "64-true"})
#: Packages of Lightning's ``Trainer`` (``lightning.Trainer``, ``pytorch_lightning.Trainer``).
LIGHTNING_PACKAGES: FrozenSet[str] = frozenset({"lightning", "pytorch_lightning"})
#: Folders (below the code's folder and each folder above it) where projects keep the configs
#: they launch with ``accelerate launch --config_file ...`` (``accelerate config`` writes one;
#: trlx ``configs/accelerate/``, open-instruct ``configs/ds_configs/``, alignment-handbook
#: ``recipes/accelerate_configs/``).
ACCELERATE_CONFIG_FOLDERS: Tuple[str, ...] = (
    "", "configs", "config", "configs/accelerate", "accelerate_configs", "configs/accelerate_configs",
    "configs/ds_configs", "recipes/accelerate_configs",
)
#: Packages those names must come from (a user class named ``Trainer`` is not Lightning's).
FRAMEWORK_PACKAGES: FrozenSet[str] = frozenset({
    "accelerate", "lightning", "pytorch_lightning", "lightning_fabric", "transformers", "trl",
})

#: Optimizer classes of other libraries, by their last name component (apex, DeepSpeed, bitsandbytes,
#: transformers, timm, torch_optimizer, lion-pytorch): they update parameters in their own dtype.
#: The optimizer ``getattr(torch.optim, name)`` makes when ``name`` is not known (the user's choice):
#: an optimizer over the parameters it is given, of no known class (so of no known ``eps``).
SOME_TORCH_OPTIMIZER = "torch.optim.Optimizer"

#: The class ``eval(name)`` gives for a name nobody knows where the calling module's names reach
#: ``nn.Module`` classes of the project (YOLO's ``parse_model`` evaluates the layer names of a model
#: YAML): one of them, not known which, so what it builds is a model of no known class.
SOME_PROJECT_MODULE_CLASS = "<a project nn.Module class>"

OPTIMIZER_NAMES: FrozenSet[str] = frozenset({
    "Adam", "AdamW", "SGD", "LAMB", "Lamb", "Adafactor", "FusedAdam", "FusedLAMB", "FusedSGD", "DeepSpeedCPUAdam",
    "Lion", "AdamW8bit", "Adam8bit", "PagedAdamW", "PagedAdamW8bit", "RAdam", "NAdam", "AdaBelief", "Lookahead",
    "Adagrad", "RMSprop", "NovoGrad", "LARS", "Shampoo", "SophiaG", "Prodigy", "AdamP", "SGDP", "Ranger",
})
