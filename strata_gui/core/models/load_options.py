"""Load options per model: how llama-server loads a model, saved under the model's identity.

Context, GPU layers, flash attention, the KV-cache types, batch and micro-batch, threads, mmap and
parallel slots. Options a user never set for a model follow Settings (context, GPU layers, flash
attention, threads, slots) or the engine's defaults. The chat launch, the benchmark, ``strata
chat|serve|bench`` and the chat's "Load options" panel all read them here, and the fit verdict the
panel shows is computed from the same options (the KV-cache types change the KV bytes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import SettingsError, StrataError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.state_file import load_record
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, joined
from strata_gui.core.config.settings import Settings, SettingsService
from strata_gui.core.models.chat_template import (
    TemplateCapabilities,
    read_chat_template,
    template_capabilities,
)
from strata_gui.core.models.draft import check_draft
from strata_gui.core.models.facts import ModelFacts, dataclass_from_json
from strata_gui.core.models.fit import (
    KV_CACHE_TYPES,
    UBATCH,
    CacheLayout,
    FitEstimate,
    MemoryTarget,
    ModelShape,
    auto_slots,
    estimate_fit,
)
from strata_gui.core.models.gguf_meta import read_header
from strata_gui.core.models.identity import model_identity
from strata_gui.core.models.library import find_projector
from strata_gui.core.runtime.launch import ServerSettings

log = logging.getLogger(__name__)

CACHE_TYPES = tuple(KV_CACHE_TYPES)  # f16, q8_0, q4_0: what the panel and the CLI offer
FLASH_ATTENTION = ("auto", "on", "off")
THINKING = ("auto", "on", "off")  # "auto": what the model's template does by default
EFFORTS = ("", "low", "medium", "high")  # "": the template's default level


@dataclass(frozen=True)
class LoadOptions:
    """How one model is loaded.

    Attributes:
        ctx_size: Context size in tokens.
        gpu_layers: "all", "auto" or a number of layers.
        flash_attention: "auto", "on" or "off".
        cache_type_k, cache_type_v: KV-cache types ("f16", "q8_0", "q4_0").
        batch_size, ubatch_size: Logical and physical batch (0: the engine's default).
        threads: CPU threads (0: the engine's default).
        mmap: Memory-map the model file (False: read it into memory).
        parallel: Requests the engine serves at once (parallel slots, each with ``ctx_size``
            tokens); 0: automatic, as many as fit in memory at the model's context, at most
            :data:`~strata_gui.core.models.fit.MOST_AUTO_SLOTS`.
        draft_model: A smaller model of the same vocabulary for speculative decoding ("" = none).
        draft_max, draft_min: Tokens drafted per step (0: the engine's default).
        chat_parsing: Let the engine read thinking and tool calls out of the model's text (its
            chat format). False starts it with ``--skip-chat-parsing``: for a model whose output
            keeps failing its format; the text then arrives as written.
        max_output_tokens: The reply limit in tokens (0: Strata's default,
            :data:`~strata_gui.core.runtime.client.DEFAULT_MAX_TOKENS`). A conversation's own
            "Max tokens" wins over it.
        thinking: ``"auto"`` (the template's default), ``"on"`` or ``"off"``, for templates with a
            thinking switch; sent with each request, so changing it needs no reload.
        effort: ``""`` (the template's default), ``"low"``, ``"medium"`` or ``"high"``, for
            templates that take an effort level (gpt-oss).
        thinking_budget: Most thinking tokens per reply (-1: no limit).
    """

    ctx_size: int = 4096
    gpu_layers: str = "all"
    flash_attention: str = "auto"
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    batch_size: int = 0
    ubatch_size: int = 0
    threads: int = 0
    mmap: bool = True
    parallel: int = 0
    draft_model: str = ""
    draft_max: int = 0
    draft_min: int = 0
    chat_parsing: bool = True
    max_output_tokens: int = 0
    thinking: str = "auto"
    effort: str = ""
    thinking_budget: int = -1

    @classmethod
    def from_settings(cls, s: Settings) -> LoadOptions:
        """The options of a model nobody configured: Settings' runtime defaults."""
        return cls(ctx_size=s.context_size, gpu_layers=s.gpu_layers, flash_attention=s.flash_attention,
                   threads=s.threads, parallel=max(0, s.parallel_slots))

    def replace(self, **changes: Any) -> LoadOptions:
        """A copy with ``changes`` (unknown names raise :class:`SettingsError`)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise SettingsError(T(QT_TRANSLATE_NOOP("Core", "Unknown load option: {names}."),
                                  names=", ".join(sorted(unknown))))
        return dataclasses.replace(self, **changes)

    def problems(self) -> list[str]:
        """What stops llama-server from loading with these options, as sentences (empty: fine)."""
        out: list[str] = []
        if self.ctx_size < 0:
            out.append(QT_TRANSLATE_NOOP("Core", "The context size cannot be negative."))
        if self.gpu_layers not in ("all", "auto") and not self.gpu_layers.isdigit():
            out.append(QT_TRANSLATE_NOOP("Core", "GPU layers must be 'all', 'auto' or a number."))
        if self.flash_attention not in FLASH_ATTENTION:
            out.append(QT_TRANSLATE_NOOP("Core", "Flash attention must be on, off or auto."))
        for which, value in (("K", self.cache_type_k), ("V", self.cache_type_v)):
            if value not in KV_CACHE_TYPES:
                out.append(T(QT_TRANSLATE_NOOP("Core", "The {which} cache type must be one of {types}."), which=which,
                              types=", ".join(CACHE_TYPES)))
        # llama.cpp refuses a quantised V cache without flash attention (llama-context.cpp).
        if self.cache_type_v != "f16" and self.flash_attention == "off":
            out.append(QT_TRANSLATE_NOOP("Core", "A quantised V cache needs flash attention: set flash attention to on "
                                                 "or auto."))
        if min(self.batch_size, self.ubatch_size, self.threads, self.parallel) < 0:
            out.append(QT_TRANSLATE_NOOP("Core", "Batch sizes, threads and parallel requests cannot be negative."))
        if self.batch_size and self.ubatch_size > self.batch_size:
            out.append(QT_TRANSLATE_NOOP("Core", "The micro-batch cannot be larger than the batch."))
        if min(self.draft_max, self.draft_min) < 0 or (self.draft_max and self.draft_min > self.draft_max):
            out.append(QT_TRANSLATE_NOOP("Core", "Draft limits cannot be negative, and the minimum cannot exceed the "
                                                 "maximum."))
        if self.max_output_tokens < 0:
            out.append(QT_TRANSLATE_NOOP("Core", "The reply limit cannot be negative (0 means Strata's default)."))
        if self.thinking not in THINKING:
            out.append(QT_TRANSLATE_NOOP("Core", "Thinking must be auto, on or off."))
        if self.effort not in EFFORTS:
            out.append(QT_TRANSLATE_NOOP("Core", "The thinking effort must be low, medium or high (or empty for the "
                                                 "model's default)."))
        if self.thinking_budget < -1:
            out.append(QT_TRANSLATE_NOOP("Core", "The thinking budget must be a number of tokens, or -1 for no limit."))
        return out

    def server_settings(self, base: ServerSettings | None = None) -> ServerSettings:
        """``base`` (or the defaults) with these options applied (automatic slots as one: see
        :meth:`LoadOptionsService.server_settings`, which sizes them)."""
        return dataclasses.replace(
            base or ServerSettings(), ctx_size=self.ctx_size, gpu_layers=self.gpu_layers,
            flash_attention=self.flash_attention, cache_type_k=self.cache_type_k, cache_type_v=self.cache_type_v,
            batch_size=self.batch_size, ubatch_size=self.ubatch_size, threads=self.threads, mmap=self.mmap,
            parallel=max(1, self.parallel), draft_model=self.draft_model, draft_max=self.draft_max,
            draft_min=self.draft_min, chat_parsing=self.chat_parsing)

    def layout(self, cpu_only: bool = False) -> CacheLayout:
        """What the fit estimate needs of these options."""
        ub = self.ubatch_size or UBATCH
        if self.batch_size:
            ub = min(ub, self.batch_size)
        layers = 0 if cpu_only else (int(self.gpu_layers) if self.gpu_layers.isdigit() else None)
        return CacheLayout(self.cache_type_k, self.cache_type_v, ub, layers)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def known(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """The entries of ``raw`` that are options with the right type (a hand-edited file may hold others)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value = raw.get(f.name)
            default = getattr(cls(), f.name)
            if value is not None and type(value) is type(default):
                out[f.name] = value
        return out




class LoadOptionsService:
    """The one owner of per-model load options: saved, this-run overrides, launch settings, fit.

    Args:
        path: The JSON file (``load_options.json`` in the data folder), keyed by model identity.
        settings: The settings service (defaults for options a model has no saved value for).
        memory_target: The memory the fit is judged against (the GPU, RPC workers included).
        ram_bytes: Total system RAM, or a function that reads it when a fit is first judged.
        identity: Model identity function (the same key for a renamed or moved file).
        facts: Where the identity, shape and template of each model file are kept across runs
            (None: read once per run).
    """

    def __init__(self, path: Path, settings: SettingsService, memory_target: Callable[[], MemoryTarget],
                 ram_bytes: int | Callable[[], int], identity: Callable[[Path], str] = model_identity,
                 facts: ModelFacts | None = None) -> None:
        self.path = path
        self._facts = facts
        self._settings = settings
        self._memory_target = memory_target
        self._ram_source = ram_bytes
        self._ram: int | None = ram_bytes if isinstance(ram_bytes, int) else None
        self._identity = identity
        self._ids: dict[tuple[Path, int, int], str] = {}
        self._shapes: dict[tuple[Path, int, int], ModelShape] = {}
        self._templates: dict[tuple[Path, int, int], TemplateCapabilities | None] = {}
        self._overrides: dict[str, Any] = {}
        self.events: Listeners[Path] = Listeners()  # the model whose saved options changed
        self._saved = self._read()

    # -- storage ---------------------------------------------------------------------------------
    def _read(self) -> dict[str, dict[str, Any]]:
        # Options are a convenience: an unusable file means defaults, never a failed start (it is
        # kept aside, named in the log and on the command line).
        raw = load_record(self.path, dict, QT_TRANSLATE_NOOP("Core", "the saved load options")).data
        if raw is None or not isinstance(raw.get("models"), dict):
            return {}
        saved = {k: LoadOptions.known(v) for k, v in raw["models"].items() if isinstance(v, dict)}
        if raw.get("version") == 1:
            # Version 1 saved every option, and one slot was the only default there was: those
            # models follow Settings' (automatic) parallel requests now.
            for options in saved.values():
                if options.get("parallel") == 1:
                    del options["parallel"]
        return saved

    def _write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"version": 2, "models": self._saved}, indent=2), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise SettingsError(T(QT_TRANSLATE_NOOP("Core", "Could not save the load options: {reason}."),
                                  reason=exc.strerror or exc),
                                hint=T(QT_TRANSLATE_NOOP("Core", "Check that {folder} is writable."),
                                       folder=self.path.parent)) from exc

    def key(self, model: Path) -> str:
        """The model's identity (cached per file version: hashing reads up to 2 MiB)."""
        st = model.stat()
        k = (model.resolve(), st.st_size, st.st_mtime_ns)
        if k not in self._ids:
            self._ids[k] = self._fact(model, "identity", self._identity, _read_identity)
        return self._ids[k]

    def _fact(self, model: Path, kind: str, read: Callable[[Path], Any], decode: Callable[[Any], Any]) -> Any:
        if self._facts is None:
            return read(model)
        return self._facts.get(model, kind, read, decode)

    # -- options ---------------------------------------------------------------------------------
    def defaults(self) -> LoadOptions:
        return LoadOptions.from_settings(self._settings.current)

    def saved(self, model: Path) -> dict[str, Any]:
        """The options saved for ``model`` (only those the user set; {} when none or unreadable)."""
        try:
            return dict(self._saved.get(self.key(model), {}))
        except OSError:
            return {}

    def options(self, model: Path | None) -> LoadOptions:
        """What ``model`` loads with: Settings' defaults, its saved options, then this run's overrides."""
        saved = self.saved(model) if model is not None else {}
        return self.defaults().replace(**{**saved, **self._overrides})

    def override(self, **changes: Any) -> None:
        """Options for this run only (command-line flags), for every model; never saved."""
        LoadOptions().replace(**changes)  # unknown names raise
        self._overrides.update(changes)
        self._check(self.options(None))

    @staticmethod
    def _check(options: LoadOptions) -> None:
        problems = options.problems()
        if problems:
            raise SettingsError(problems[0], hint=joined(problems[1:]) or None)

    def save(self, model: Path, options: LoadOptions) -> None:
        """Remember ``options`` for ``model`` (the next load uses them).

        Raises:
            SettingsError: The options cannot load (see :meth:`LoadOptions.problems`), or the
                file could not be written.
        """
        self._check(options)
        self._saved[self.key(model)] = options.to_json()
        self._write()
        self.events.emit(model)

    def forget(self, model: Path) -> None:
        """Drop what was saved for ``model``: it follows Settings again."""
        if self._saved.pop(self.key(model), None) is not None:
            self._write()
            self.events.emit(model)

    def server_settings(self, model: Path | None) -> ServerSettings:
        """The launch settings of ``model`` (what the chat and ``strata serve`` start it with), its
        parallel slots sized when they are automatic (blocking: reads the model's header once)."""
        options = self.options(model)
        if model is None:
            return options.server_settings()
        settings = options.replace(parallel=self.slots(model, options)).server_settings()
        if settings.parallel > 1 and settings.ctx_size == 0:
            # "The model's context" for each of several requests: their shared cache needs a size.
            with contextlib.suppress(OSError, StrataError):
                settings = dataclasses.replace(settings, ctx_size=self.shape_now(model).trained_context)
            if settings.ctx_size == 0:
                settings = dataclasses.replace(settings, parallel=1)
        return settings

    def slots(self, model: Path, options: LoadOptions) -> int:
        """Requests ``model`` serves at once with ``options``: the options' own number, else as
        many as fit in memory at its context (:func:`~strata_gui.core.models.fit.auto_slots`);
        one when its header cannot be read (blocking)."""
        if options.parallel > 0:
            return options.parallel
        try:
            shape = self.shape_now(model)
        except (OSError, StrataError):
            return 1
        return auto_slots(shape, self._memory_target(), self.ram_bytes, options.ctx_size or shape.trained_context,
                          options.layout())

    def launch_settings(self, model: Path) -> ServerSettings:
        """:meth:`server_settings` plus the model's vision projector (``--mmproj``) when one is next
        to it: exactly what the chat loads the model with, so the local API borrowing the model
        shares the chat's engine instead of loading a second copy (blocking: lists the folder)."""
        settings = self.server_settings(model)
        projector = find_projector(model)
        return dataclasses.replace(settings, mmproj=str(projector)) if projector is not None else settings

    # -- fit ---------------------------------------------------------------------------------------
    def shape_now(self, model: Path) -> ModelShape:
        """The model's shape, read now (blocking: reads its header once per file version)."""
        st = model.stat()
        k = (model.resolve(), st.st_size, st.st_mtime_ns)
        if k not in self._shapes:
            self._shapes[k] = self._fact(model, "shape", read_shape, _read_shape)
        return self._shapes[k]

    async def shape(self, model: Path) -> ModelShape:
        """The model's shape (its header read off the event loop, then cached)."""
        return await run_blocking(self.shape_now, model, name="strata-load-options")

    @staticmethod
    def problems(shape: ModelShape, options: LoadOptions) -> list[str]:
        """What stops this model from loading with ``options`` (the options' own problems first).

        With flash attention on or auto, llama.cpp stores the cache in blocks along each head, so a
        quantised type needs the head size to be a multiple of its block (32 values).
        """
        out = options.problems()
        if options.flash_attention == "off":
            return out
        for which, cache_type, head in (("K", options.cache_type_k, shape.key_length),
                                        ("V", options.cache_type_v, shape.value_length)):
            block = KV_CACHE_TYPES.get(cache_type, (2, 1))[1]
            if head and head % block:
                template = (QT_TRANSLATE_NOOP("Core", "This model's heads hold {head} values, not a multiple of "
                                                      "the {cache_type} block ({block}): use f16 for {which}, or "
                                                      "turn flash attention off.") if which == "K"
                            else QT_TRANSLATE_NOOP("Core", "This model's heads hold {head} values, not a multiple "
                                                           "of the {cache_type} block ({block}): use f16 for "
                                                           "{which}."))
                out.append(T(template, head=head, cache_type=cache_type, block=block, which=which))
        return out

    def template_now(self, model: Path) -> TemplateCapabilities | None:
        """What the model's chat template supports (blocking: reads its header once per file
        version); None when the model has no template.

        Raises:
            GGUFError: The header cannot be read.
        """
        st = model.stat()
        k = (model.resolve(), st.st_size, st.st_mtime_ns)
        if k not in self._templates:
            self._templates[k] = self._fact(model, "template", read_template, _read_template)
        return self._templates[k]

    async def template(self, model: Path) -> TemplateCapabilities | None:
        """:meth:`template_now`, read off the event loop (a 150k-token vocabulary takes ~0.1 s to skip)."""
        return await run_blocking(self.template_now, model, name="strata-chat-template")

    async def check_draft(self, model: Path, options: LoadOptions) -> None:
        """Raise :class:`ModelError` unless ``options``' draft model shares ``model``'s vocabulary
        (nothing to check without a draft). The headers are read off the event loop."""
        if options.draft_model:
            await run_blocking(check_draft, model, Path(options.draft_model), name="strata-draft-check")

    @property
    def ram_bytes(self) -> int:
        """Total system RAM (read once)."""
        if self._ram is None:
            source = self._ram_source
            self._ram = source if isinstance(source, int) else source()
        return self._ram

    def fit(self, shape: ModelShape, options: LoadOptions, *, cpu_only: bool = False) -> FitEstimate:
        """Where the model runs with ``options`` (the verdict the panel and ``models inspect`` show)."""
        target = MemoryTarget("CPU", 0) if cpu_only else self._memory_target()
        n_ctx = options.ctx_size or shape.trained_context
        slots = options.parallel or auto_slots(shape, target, self.ram_bytes, n_ctx, options.layout(cpu_only))
        return estimate_fit(shape, target, self.ram_bytes, n_ctx, options.layout(cpu_only), slots)


def read_shape(model: Path) -> ModelShape:
    """The model's shape from its header (blocking)."""
    return ModelShape.from_metadata(read_header(model), model_bytes(model))


def read_template(model: Path) -> TemplateCapabilities | None:
    """What the model's chat template supports, from its header (blocking); None without one."""
    text = read_chat_template(model)
    return template_capabilities(text) if text else None


def _read_identity(raw: Any) -> str:
    if not isinstance(raw, str) or not raw:
        raise ValueError("not a stored identity")
    return raw


_read_template = dataclass_from_json(TemplateCapabilities)


def _read_shape(raw: Any) -> ModelShape:
    shape = dataclass_from_json(ModelShape)(raw)
    if shape is None:
        raise ValueError("not a stored shape")
    return shape


def model_bytes(model: Path) -> int:
    """Size on disk, all shards of a split set included (the weights the fit counts)."""
    import re

    m = re.match(r"(.*)-(\d{5})-of-(\d{5})\.gguf$", model.name)
    files = sorted(model.parent.glob(f"{m.group(1)}-*-of-{m.group(3)}.gguf")) if m else [model]
    return sum(f.stat().st_size for f in files if f.is_file())
