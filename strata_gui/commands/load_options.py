"""The load options every command that starts an engine takes (``strata chat|serve|bench``).

The same options as the chat's "Load options" panel; given on the command line they apply to this
run only (the model's saved options and Settings stay as they are).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from strata_gui.commands import arg_types
from strata_gui.core.app_services import AppServices
from strata_gui.core.models import CACHE_TYPES, FLASH_ATTENTION


def add_arguments(p: argparse.ArgumentParser, *, ctx: bool = True) -> None:
    """Add ``--ctx-size --gpu-layers --flash-attn --cache-type-k/v --batch-size --ubatch-size
    --threads --no-mmap --parallel --model-draft --draft-max/min --no-chat-parsing`` to ``p`` (``ctx`` False when the command sizes the context itself)."""
    g = p.add_argument_group("load options (this run only; default: the model's saved options, else Settings)")
    if ctx:
        g.add_argument("--ctx-size", type=arg_types.CONTEXT, default=None, metavar="N", help="context size in tokens")
    g.add_argument("--gpu-layers", default=None, metavar="N|all|auto", help="layers on the GPU")
    g.add_argument("--flash-attn", choices=FLASH_ATTENTION, default=None, help="flash attention")
    g.add_argument("--cache-type-k", choices=CACHE_TYPES, default=None, help="KV-cache type of K")
    g.add_argument("--cache-type-v", choices=CACHE_TYPES, default=None,
                   help="KV-cache type of V (quantised needs flash attention on or auto)")
    g.add_argument("--batch-size", type=arg_types.BATCH, default=None, metavar="N", help="logical batch size")
    g.add_argument("--ubatch-size", type=arg_types.BATCH, default=None, metavar="N", help="physical (micro) batch size")
    g.add_argument("--threads", type=arg_types.THREADS, default=None, metavar="N", help="CPU threads")
    g.add_argument("--no-mmap", action="store_true", help="read the model into memory instead of mapping it")
    g.add_argument("--parallel", type=arg_types.PARALLEL, default=None, metavar="N",
                   help="requests the engine serves at once (0: as many as fit, at most 4)")
    g.add_argument("--model-draft", type=Path, default=None, metavar="FILE",
                   help="draft model for speculative decoding (same vocabulary as the model)")
    g.add_argument("--draft-max", type=arg_types.DRAFT, default=None, metavar="N", help="most tokens drafted per step")
    g.add_argument("--draft-min", type=arg_types.DRAFT, default=None, metavar="N", help="fewest tokens drafted per step")
    g.add_argument("--no-chat-parsing", action="store_true",
                   help="start the engine with --skip-chat-parsing: the model's text arrives as written (for a "
                        "model whose output keeps failing its chat format; no tool calls then)")


def given(args: argparse.Namespace) -> dict[str, Any]:
    """The load options named on the command line, as :class:`LoadOptions` field names."""
    names = {"ctx_size": "ctx_size", "gpu_layers": "gpu_layers", "flash_attn": "flash_attention",
             "cache_type_k": "cache_type_k", "cache_type_v": "cache_type_v", "batch_size": "batch_size",
             "ubatch_size": "ubatch_size", "threads": "threads", "parallel": "parallel",
             "draft_max": "draft_max", "draft_min": "draft_min"}
    out = {field: getattr(args, attr) for attr, field in names.items() if getattr(args, attr, None) is not None}
    if getattr(args, "no_mmap", False):
        out["mmap"] = False
    if getattr(args, "no_chat_parsing", False):
        out["chat_parsing"] = False
    if getattr(args, "model_draft", None) is not None:
        out["draft_model"] = str(args.model_draft.expanduser().resolve())
    return out


def apply(args: argparse.Namespace, app: AppServices) -> None:
    """Make the options given on the command line win for this run (checked by the core)."""
    options = given(args)
    if options:
        app.load_options.override(**options)


async def check(app: AppServices, model: Path | None) -> None:
    """Stop with a clear error before loading when the draft model cannot draft for ``model``."""
    if model is not None:
        await app.load_options.check_draft(model, app.load_options.options(model))
