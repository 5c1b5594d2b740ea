"""What the torch.export conversions share (not a conversion: files starting
with '_' are not read by the catalog).

``exported`` makes a torch.export program of the module on sample 0's
shapes (static shapes: the engine's batches all have sample 0's); the
build cache keeps it with torch.export.save (``PROGRAM_FILE``), so a later
run loads the program instead of exporting again.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from .base import ConvertContext, Converted, eval_copy

#: The file an export conversion keeps in its build folder.
PROGRAM_FILE = "program.pt2"


def exported(
    model: Any, ctx: ConvertContext, strict: bool = False
) -> "torch.export.ExportedProgram":
    """torch.export.export of the module in eval mode on sample 0 (`strict`:
    traced by Dynamo, torch.export's strict mode). A TorchScript module
    cannot be exported: TypeError saying so."""
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError("torch.export needs an nn.Module, not a TorchScript module")
    with torch.no_grad():
        return torch.export.export(eval_copy(model), tuple(ctx.example_inputs), strict=strict)


def save_program(program: "torch.export.ExportedProgram", folder: str) -> None:
    """Keeps the exported program in the build folder."""
    torch.export.save(program, os.path.join(folder, PROGRAM_FILE))


def load_program(folder: str) -> "torch.export.ExportedProgram":
    """The program save_program kept."""
    return torch.export.load(os.path.join(folder, PROGRAM_FILE))


def compiled_program(model: Any, ctx: ConvertContext, **compile_kwargs: Any) -> Converted:
    """The module exported, then torch.compile of the program's module
    (_compile.compiled's keyword arguments); keeps the program."""
    from ._compile import compiled

    program = exported(model, ctx)
    converted = compiled(program.module(), ctx, eval_mode=False, **compile_kwargs)
    converted.keep = program
    return converted


def save_compiled_program(converted: Converted, folder: str) -> None:
    """Keeps the program and Inductor's caches of its compilation."""
    from ._compile import save_cache

    save_program(converted.keep, folder)
    save_cache(converted, folder)


def compiled_program_loader(**compile_kwargs: Any):
    """A ``load(folder, ctx)``: the kept program, compiled again from the
    kept Inductor caches."""
    from ._compile import compiled, load_cache

    def load(folder: str, ctx: ConvertContext) -> Converted:
        load_cache(folder)
        program = load_program(folder)
        converted = compiled(program.module(), ctx, eval_mode=False, **compile_kwargs)
        converted.keep = program
        return converted

    return load
