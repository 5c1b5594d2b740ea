"""What the torch.compile conversions share (not a conversion itself: files
starting with '_' are not read by the catalog).

The compilation happens in the build, never in the timed loop: ``compiled``
calls the compiled module on sample 0 until it has compiled, under the same
grad mode as the timed calls (inference mode), so that the timed calls hit
the compiled graph. What the timed loop compiles again (a guard that fails,
a new shape) is counted by ``Converted.recompiles``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional

import torch

from .base import ConvertContext, Converted, eval_copy

#: Calls on sample 0 in the build: the first compiles, the second checks
#: that the guards hold for a call like the timed ones.
COMPILE_CALLS = 2

#: The file a compiled conversion keeps in its build folder: Inductor's
#: caches (torch.compiler.save_cache_artifacts), which make the next
#: compilation of the same graph a cache hit.
CACHE_FILE = "compile-cache.bin"


def graph_count() -> int:
    """Graphs Dynamo has compiled in this process so far."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def replays_cuda_graphs(ctx: ConvertContext, mode: Optional[str], backend: str) -> bool:
    """Does this compilation replay CUDA graphs (cudagraph trees)? On a GPU:
    the cudagraphs backend, Inductor's reduce-overhead and max-autotune."""
    return ctx.device == "cuda" and (
        backend == "cudagraphs" or mode in ("reduce-overhead", "max-autotune"))


def _step_per_call(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn with torch.compiler.cudagraph_mark_step_begin() before each call,
    as PyTorch asks of an inference loop over CUDA graphs: each call is a
    new step, whose outputs may overwrite the last one's (the engine keeps
    only the last)."""
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    if mark is None:
        return fn

    def step(*args: Any) -> Any:
        mark()
        return fn(*args)

    return step


def compiled(
    model: Any,
    ctx: ConvertContext,
    *,
    mode: Optional[str],
    backend: str = "inductor",
    eager_fallback: bool = False,
    eval_mode: bool = True,
    freezing: bool = False,
    options: Optional[Dict[str, Any]] = None,
) -> Converted:
    """torch.compile(model, backend, mode), compiled here by calls on
    sample 0 under inference mode. `eager_fallback`: parts Dynamo or
    Inductor cannot compile run eagerly (alma's *_EAGER_FALLBACK:
    torch._dynamo.config.suppress_errors) instead of failing. `eval_mode`
    False: the module is not put in eval mode (an exported program's
    module, already in the mode it was exported in). `freezing`: Inductor
    folds the weights into the graph as constants and prepacks them
    (torch._inductor.config.freezing, for inference). `options`: the
    backend's own (torch.compile's ``options``; ``mode`` must then be None)."""
    from ... import inductor

    inductor.prepare()  # before Inductor is imported: its cache folder
    import torch._dynamo
    import torch._inductor.config

    if eval_mode and isinstance(model, torch.nn.Module):
        model = eval_copy(model)
    fn = torch.compile(model, backend=backend, mode=mode, options=options)
    if replays_cuda_graphs(ctx, mode, backend):
        fn = _step_per_call(fn)
    before = graph_count()
    # The settings apply to this compilation only (a profile's validation
    # converts in the user's own process).
    with torch._dynamo.config.patch(suppress_errors=eager_fallback), \
            torch._inductor.config.patch(freezing=freezing), torch.inference_mode():
        # Inputs made as the timed calls' are (inference tensors: Dynamo
        # guards on that too), so that the timed calls hit this graph.
        example = tuple(t.clone() for t in ctx.example_inputs)
        for _ in range(COMPILE_CALLS):
            fn(*example)
    ctx.log.info("torch.compile(backend=%s, mode=%s, freezing=%s): %d graph(s) compiled "
                 "in the build", backend, mode, freezing, graph_count() - before)
    settled = graph_count()
    return Converted(fn=fn, recompiles=lambda: graph_count() - settled)


def save_cache(converted: Converted, folder: str) -> None:  # noqa: ARG001
    """Keeps Inductor's caches of what this process compiled."""
    saved = torch.compiler.save_cache_artifacts()
    if saved is None:
        return
    data = saved[0]
    with open(os.path.join(folder, CACHE_FILE), "wb") as f:
        f.write(data)


def load_cache(folder: str) -> None:
    """Loads the Inductor caches save_cache kept, so that the next
    compilation of the same graph is a cache hit."""
    with open(os.path.join(folder, CACHE_FILE), "rb") as f:
        torch.compiler.load_cache_artifacts(f.read())


def loader(convert: Callable[[Any, ConvertContext], Converted]):
    """A ``load(folder, ctx)`` for a compiled conversion: Inductor's caches
    kept by save_cache are loaded, then `convert` compiles the module again
    from them (cache hits: no code generation, no C++ compiler)."""

    def load(folder: str, ctx: ConvertContext) -> Converted:
        load_cache(folder)
        if ctx.load_model is None:
            raise FileNotFoundError("no module to compile again")
        return convert(ctx.load_model(), ctx)

    return load
