"""alma's conversion options by id and name, and what each is in modelbench.

alma (``alma-torch`` 0.3.7, ``alma.conversions.conversion_options``) numbers
its 72 options 0-71. In the Python front an integer (or a string of digits)
is one of those ids and means what it means in alma; modelbench's own registry
ids (``modelbench list``) are written ``"mb:N"``. Each alma option either runs
as the modelbench conversion of the same technique or is unavailable with its
reason; an id never silently selects another technique.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

from . import catalog

#: alma's ids and names (its MODEL_CONVERSION_OPTIONS), in order. Its id 42 is
#: spelled OPTIMIM_QUANTO_... in alma's table; both spellings are accepted.
ALMA_MODES: List[str] = [
    "EAGER", "EXPORT+EAGER", "ONNX_CPU", "ONNX_GPU", "ONNX+DYNAMO_EXPORT",
    "COMPILE_CUDAGRAPHS", "COMPILE_INDUCTOR_DEFAULT", "COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    "COMPILE_INDUCTOR_MAX_AUTOTUNE", "COMPILE_INDUCTOR_EAGER_FALLBACK", "COMPILE_ONNXRT",
    "COMPILE_OPENXLA", "COMPILE_TVM", "EXPORT+AI8WI8_FLOAT_QUANTIZED",
    "EXPORT+AI8WI8_FLOAT_QUANTIZED+RUN_DECOMPOSITION", "EXPORT+AI8WI8_STATIC_QUANTIZED",
    "EXPORT+AI8WI8_STATIC_QUANTIZED+RUN_DECOMPOSITION", "EXPORT+AOT_INDUCTOR",
    "EXPORT+COMPILE_CUDAGRAPHS", "EXPORT+COMPILE_INDUCTOR_DEFAULT",
    "EXPORT+COMPILE_INDUCTOR_REDUCE_OVERHEAD", "EXPORT+COMPILE_INDUCTOR_MAX_AUTOTUNE",
    "EXPORT+COMPILE_INDUCTOR_DEFAULT_EAGER_FALLBACK", "EXPORT+COMPILE_ONNXRT",
    "EXPORT+COMPILE_OPENXLA", "EXPORT+COMPILE_TVM", "NATIVE_CONVERT_AI8WI8_STATIC_QUANTIZED",
    "NATIVE_FAKE_QUANTIZED_AI8WI8_STATIC", "COMPILE_TENSORRT", "EXPORT+COMPILE_TENSORRT",
    "COMPILE_OPENVINO", "JIT_TRACE", "TORCH_SCRIPT", "OPTIMUM_QUANTO_AI8WI8",
    "OPTIMUM_QUANTO_AI8WI4", "OPTIMUM_QUANTO_AI8WI2", "OPTIMUM_QUANTO_WI8",
    "OPTIMUM_QUANTO_WI4", "OPTIMUM_QUANTO_WI2", "OPTIMUM_QUANTO_Wf8E4M3N",
    "OPTIMUM_QUANTO_Wf8E4M3NUZ", "OPTIMUM_QUANTO_Wf8E5M2",
    "OPTIMUM_QUANTO_Wf8E5M2+COMPILE_CUDAGRAPHS", "FP16+EAGER", "BF16+EAGER",
    "COMPILE_INDUCTOR_MAX_AUTOTUNE+TORCHAO_AUTOQUANT_DEFAULT",
    "COMPILE_INDUCTOR_MAX_AUTOTUNE+TORCHAO_AUTOQUANT_NONDEFAULT",
    "COMPILE_CUDAGRAPHS+TORCHAO_AUTOQUANT_DEFAULT",
    "COMPILE_INDUCTOR_MAX_AUTOTUNE+TORCHAO_QUANT_I4_WEIGHT_ONLY",
    "TORCHAO_QUANT_I4_WEIGHT_ONLY", "FP16+COMPILE_CUDAGRAPHS", "FP16+COMPILE_INDUCTOR_DEFAULT",
    "FP16+COMPILE_INDUCTOR_REDUCE_OVERHEAD", "FP16+COMPILE_INDUCTOR_MAX_AUTOTUNE",
    "FP16+COMPILE_INDUCTOR_EAGER_FALLBACK", "FP16+COMPILE_ONNXRT", "FP16+COMPILE_OPENXLA",
    "FP16+COMPILE_TVM", "FP16+COMPILE_TENSORRT", "FP16+COMPILE_OPENVINO",
    "FP16+EXPORT+COMPILE_CUDAGRAPHS", "FP16+EXPORT+COMPILE_INDUCTOR_DEFAULT",
    "FP16+EXPORT+COMPILE_INDUCTOR_REDUCE_OVERHEAD", "FP16+EXPORT+COMPILE_INDUCTOR_MAX_AUTOTUNE",
    "FP16+EXPORT+COMPILE_INDUCTOR_DEFAULT_EAGER_FALLBACK", "FP16+EXPORT+COMPILE_ONNXRT",
    "FP16+EXPORT+COMPILE_OPENXLA", "FP16+EXPORT+COMPILE_TVM", "FP16+EXPORT+COMPILE_TENSORRT",
    "FP16+EXPORT+COMPILE_OPENVINO", "FP16+JIT_TRACE", "FP16+TORCH_SCRIPT",
]

#: alma's names of the techniques modelbench has, by modelbench's name: the
#: engine's own rows here, the PyTorch conversions from their files
#: (``Conversion(alma=...)``, options/).
RUNS_AS: Dict[str, str] = {
    "ONNX_CPU": "ORT_CPU",
    "ONNX+DYNAMO_EXPORT": "ONNX+DYNAMO_EXPORT",
    "EXPORT+AOT_INDUCTOR": "EXPORT+AOT_INDUCTOR",
}
for _entry in catalog.read():
    if _entry.conversion.alma:
        if _entry.conversion.alma not in ALMA_MODES:
            raise catalog.CatalogError(
                f"{_entry.path}: alma={_entry.conversion.alma!r} is not one of "
                "alma's modes (conversions/alma.py ALMA_MODES)"
            )
        RUNS_AS[_entry.conversion.alma] = _entry.conversion.name

#: Spellings alma also uses for one of its modes.
SPELLINGS: Dict[str, str] = {
    "OPTIMIM_QUANTO_WF8E5M2+COMPILE_CUDAGRAPHS": "OPTIMUM_QUANTO_Wf8E5M2+COMPILE_CUDAGRAPHS",
}

# What an option that modelbench does not run would need: (part of the name,
# the Python package it imports, how to say it).
_PACKAGES = (
    ("OPENXLA", "torch_xla", "torch_xla"),
    ("TVM", "tvm", "Apache TVM"),
    ("TENSORRT", "torch_tensorrt", "torch_tensorrt"),
    ("OPENVINO", "openvino", "OpenVINO"),
    ("QUANTO", "optimum", "optimum-quanto"),
    ("TORCHAO", "torchao", "torchao"),
    ("ONNXRT", "onnxruntime", "the onnxruntime Python package"),
)
_GPU_ONLY = ("CUDAGRAPHS", "ONNX_GPU", "TENSORRT", "TORCHAO_QUANT_I4", "COMPILE_ONNXRT",
             "TORCHAO_AUTOQUANT")


@dataclass
class AlmaOption:
    """alma's ConversionOption as its scripts use it: ``mode`` (the name),
    ``device_override`` and ``data_dtype`` (a dtype name here)."""

    mode: str
    device_override: Optional[str] = None
    data_dtype: Optional[str] = "float32"


def _override(mode: str) -> Optional[str]:
    if "OPENXLA" in mode:
        return "XLA_GPU"
    if mode == "ONNX_CPU":
        return "CPU"
    if any(g in mode for g in ("CUDAGRAPHS", "ONNX_GPU", "COMPILE_ONNXRT")):
        return "CUDA"
    return None


def _dtype(mode: str) -> str:
    return "float16" if mode.startswith("FP16+") else "bfloat16" if mode.startswith("BF16+") \
        else "float32"


#: alma's MODEL_CONVERSION_OPTIONS: id -> option.
MODEL_CONVERSION_OPTIONS: Dict[int, AlmaOption] = {
    i: AlmaOption(mode, _override(mode), _dtype(mode)) for i, mode in enumerate(ALMA_MODES)
}


def mode_of(name: str) -> Optional[str]:
    """alma's spelling of `name` (any case) when it is one of alma's modes."""
    upper = name.strip().upper()
    upper = SPELLINGS.get(upper, upper)
    for mode in ALMA_MODES:
        if mode.upper() == upper:
            return mode
    return None


def unavailable_reason(mode: str) -> str:
    """Why alma's `mode` does not run here: modelbench has no such conversion
    yet, and what it would need that this machine lacks."""
    needs = []
    import torch  # the caller's process has it: a model was given

    major = int(torch.__version__.split(".")[0])
    if ("COMPILE" in mode or "EXPORT" in mode or "AOT" in mode) and major < 2:
        needs.append(f"PyTorch 2 (this is {torch.__version__})")
    if any(g in mode for g in _GPU_ONLY) and not torch.cuda.is_available():
        needs.append("a CUDA GPU (none here)")
    for part, package, label in _PACKAGES:
        if part in mode.upper() and not catalog.installed(package):
            needs.append(f"{label} (not installed)")
    if "COMPILE_ONNXRT" in mode and major >= 2:
        import torch._dynamo

        if "onnxrt" not in torch._dynamo.list_backends(exclude_tags=()):
            # PyTorch removed the backend (torch/_dynamo/backends/onnxrt.py
            # is a placeholder in recent releases).
            needs.append(f"torch.compile's 'onnxrt' backend, which PyTorch "
                         f"{torch.__version__} does not have")
    text = f"alma's {mode} is not a modelbench conversion yet"
    if needs:
        text += "; it would also need " + " and ".join(needs)
    return text + " (modelbench list shows what runs here)"
