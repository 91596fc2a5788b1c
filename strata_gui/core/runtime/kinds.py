"""Engine kinds as data: one small descriptor per kind of engine Strata runs.

A kind says everything that differs between, say, a chat engine (llama.cpp's ``llama-server``)
and an image engine (stable-diffusion.cpp's ``sd-server``): which builds run it (the catalog's
release sources of that name), the server binary, how its probe asks it for devices, its command
line, how it tells it is ready, and which job APIs it answers. Code that starts, probes, plans or
shares engines reads these fields; nothing compares a kind's name. Adding a kind (speech with
whisper.cpp, rerankers) is a new descriptor here (and its page), nothing else.

The names are stored in engine manifests, the catalog (``"kind"`` of a release source) and JSON
output, so they never change once shipped.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

if TYPE_CHECKING:
    from strata_gui.core.runtime.engine import EngineSpec
    from strata_gui.core.runtime.launch import ServerSettings

log = logging.getLogger(__name__)

CommandBuilder = Callable[["EngineSpec", Path, "ServerSettings", int], list[str]]
"""(engine, model, settings, port) → the server's command line."""
EnvironmentBuilder = Callable[["ServerSettings"], dict[str, str]]
"""Variables a launch adds for options some builds spell differently (see :func:`llama_env`)."""
EnvironmentFilter = Callable[[Mapping[str, str]], dict[str, str]]
"""The whole launch environment, less what must never reach this kind of engine."""

# The job APIs a running server answers (the local API passes them through; a pool user asks for one).
OPENAI_CHAT = "openai"  # /v1/chat/completions, /v1/completions, /v1/models
ANTHROPIC = "anthropic"  # /v1/messages, /v1/messages/count_tokens
RESPONSES = "responses"  # /v1/responses
EMBEDDINGS = "embeddings"  # /v1/embeddings
RERANK = "rerank"  # /v1/rerank
SDCPP = "sdcpp"  # /sdcpp/v1/img_gen and its job API
OPENAI_IMAGES = "openai-images"  # /v1/images/generations
WHISPER_INFERENCE = "whisper-inference"  # whisper-server's POST /inference (multipart: file, response_format, language)


@dataclass(frozen=True)
class EngineKind:
    """What one kind of engine is and how it runs.

    Attributes:
        name: Stable identifier, stored in manifests, the catalog and JSON ("text").
        label: What users read for it ("chat").
        builds: The name of the kind whose installed builds run this one: an embedding engine is
            a llama.cpp build, installed for text, started another way.
        binary: The server executable's name, without ``.exe``.
        project: Whose builds these are ("llama.cpp"), as the install pages name it.
        lists_devices: The probe can ask the build for its devices (``--list-devices``); builds
            that cannot are only known to work once a model loads, so setting them up also
            installs the next usable build as a fallback.
        ready_path: The HTTP path that answers 200 once the model is loaded.
        command: The server's command line (:data:`CommandBuilder`).
        environment: Extra launch variables (:data:`EnvironmentBuilder`).
        apis: The job APIs the running server answers.
        subject: How outcomes name a running engine of this kind; ``{engine}`` is its label.
        follows_choices: The global pin and the benchmark's measured choices order its builds.
        kv_cache: Its memory grows with the context (weights plus a KV cache per token, read
            from the GGUF header); else it is about the model files' size.
        id_prefix: Put after ``local-`` in the ids of local builds of this kind (the chat's have
            none, as they had before kinds existed).
        load_timeout: Seconds a model may take to load before the start counts as failed.
        hub_search: The Hugging Face hub's search filters for repos of this kind's models.
        scrub_env: Applied to the whole launch environment last (llama.cpp reads every option from
            ``LLAMA_ARG_*``, so a user's shell must not turn on what the command line leaves off).
        takes_key: The server can require an API key: Strata starts it with a random one of its
            own (:class:`~strata_gui.core.runtime.supervisor.ServerSupervisor`), so other programs
            on the computer cannot use it. sd-server has no such option.
        parallel_slots: The server decodes several requests at once in parallel slots (llama-server's
            ``-np`` with continuous batching), so the pool lends it to ``settings.parallel`` users
            together; else it takes one job at a time.
        probe_args: What the probe of a build that cannot list its devices runs it with: a build
            that answers (exit 0) starts on this computer. whisper-server has no ``--version``.
        about_paths: Where the ready server says what it is (llama-server's ``/props``, sd-server's
            capabilities at its readiness path), asked in order until one answers; empty for a
            server with nothing to say (each request to whisper-server costs ~40 ms on a kept-alive
            connection: it writes headers and body apart, and delayed ACKs hold the second).
    """

    name: str
    label: str
    builds: str
    binary: str
    project: str
    lists_devices: bool
    ready_path: str
    command: CommandBuilder
    environment: EnvironmentBuilder = field(default=lambda _settings: {})
    apis: frozenset[str] = frozenset()
    subject: str = QT_TRANSLATE_NOOP("Core", "{engine} engine")
    follows_choices: bool = False
    kv_cache: bool = False
    id_prefix: str = ""
    load_timeout: float = 300.0
    hub_search: tuple[tuple[str, str], ...] = (("filter", "gguf"),)
    scrub_env: EnvironmentFilter = field(default=dict)
    takes_key: bool = False
    parallel_slots: bool = False
    probe_args: tuple[str, ...] = ("--version",)
    about_paths: tuple[str, ...] | None = None  # None: /props, then the readiness path

    def executable(self, folder: Path, *, windows: bool | None = None) -> Path:
        """The server inside ``folder`` (``.exe`` on Windows)."""
        win = sys.platform == "win32" if windows is None else windows
        return folder / (self.binary + (".exe" if win else ""))

    def subject_for(self, engine_label: str) -> str:
        """"ROCm b1136 engine", "Vulkan image engine": how outcomes name it (a core Text: the GUI
        names it in the user's language)."""
        return T(self.subject, engine=engine_label)

    def serves(self, api: str) -> bool:
        return api in self.apis

    def __str__(self) -> str:
        return self.name


# -- llama-server's own agent tools: never on --------------------------------------------------------
# llama-server's experimental agent tools (common/arg.cpp of the pinned source): built-in file and
# shell tools, stdio MCP servers and a CORS proxy, all run with the engine's privileges and no
# approval. Strata's tools go through its own MCP host, which asks first; an engine never gets these.
# Flags that take a value, then switches. Builds read "--a_b" as "--a-b".
AGENT_TOOL_VALUE_FLAGS = frozenset({"--tools", "--tools-runtime", "--mcp-servers-config", "--mcp-servers-json"})
AGENT_TOOL_SWITCHES = frozenset({"-ag", "--agent", "--ui-mcp-proxy", "--webui-mcp-proxy"})
# The same options as environment variables (llama.cpp reads every option from LLAMA_ARG_*).
AGENT_TOOL_ENV = ("LLAMA_ARG_TOOLS", "LLAMA_ARG_TOOLS_RUNTIME", "LLAMA_ARG_MCP_SERVERS_CONFIG",
                  "LLAMA_ARG_MCP_SERVERS_JSON", "LLAMA_ARG_AGENT", "LLAMA_ARG_UI_MCP_PROXY")


def without_agent_tools(args: Sequence[str]) -> list[str]:
    """``args`` without llama-server's agent-tool flags (and their values)."""
    out: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
            continue
        flag = arg.replace("_", "-") if arg.startswith("--") else arg
        if flag in AGENT_TOOL_VALUE_FLAGS:
            skip_value = True
        elif flag not in AGENT_TOOL_SWITCHES:
            out.append(arg)
            continue
        log.warning("dropped the engine option %s: Strata runs tools itself, after asking", arg)
    return out


def without_agent_tools_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that would turn llama-server's agent tools on."""
    return {k: v for k, v in env.items() if k.upper() not in AGENT_TOOL_ENV}


# -- command lines ---------------------------------------------------------------------------------
def llama_command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
    """The llama-server command line. Flags that equal the engine's default are left out, so
    builds that spell them differently still start. Never the server's own tools (``--tools``,
    ``--agent``, ``--mcp-servers-config``: :func:`without_agent_tools`): they run with the engine's
    rights and ask nobody."""
    cmd = [str(engine.server_path), "-m", str(model), "--host", settings.host, "--port", str(port),
           "-c", str(max(0, settings.ctx_size) * max(1, settings.parallel))]
    if engine.backend != "cpu":
        if settings.gpu_layers == "all":
            cmd += ["-ngl", "999"]
        elif settings.gpu_layers.isdigit():
            cmd += ["-ngl", settings.gpu_layers]
    if settings.flash_attention in ("on", "off"):
        cmd += ["-fa", settings.flash_attention]
    if settings.threads > 0:
        cmd += ["-t", str(settings.threads)]
    if settings.parallel > 0:
        cmd += ["-np", str(settings.parallel)]  # "-c" is the slots' total, split evenly (see llama_env)
    if settings.jinja:
        cmd.append("--jinja")
        if not settings.chat_parsing:
            cmd.append("--skip-chat-parsing")
    if settings.metrics:
        cmd.append("--metrics")
    if settings.mmproj:
        cmd += ["--mmproj", settings.mmproj]
    if settings.cache_type_k != "f16":
        cmd += ["-ctk", settings.cache_type_k]
    if settings.cache_type_v != "f16":
        cmd += ["-ctv", settings.cache_type_v]
    if settings.batch_size > 0:
        cmd += ["-b", str(settings.batch_size)]
    if settings.ubatch_size > 0:
        cmd += ["-ub", str(settings.ubatch_size)]
    if settings.draft_model:
        cmd += ["--model-draft", settings.draft_model]  # every build since speculative decoding spells it so
    cmd += without_agent_tools(settings.extra_args)
    return cmd


def embedding_command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
    """llama-server serving ``/v1/embeddings``: the chat command plus ``--embedding``."""
    return [*llama_command(engine, model, settings, port), "--embedding"]


def rerank_command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
    """llama-server serving ``/v1/rerank``: the chat command plus ``--reranking`` (which also turns
    embeddings on with rank pooling, ``common/arg.cpp`` of the pinned source)."""
    return [*llama_command(engine, model, settings, port), "--reranking"]


def sd_command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
    """stable-diffusion.cpp's sd-server: the model options (``settings.model_args``, else
    ``--model``) and a loopback port; sd-server takes no chat options."""
    model_args = list(settings.model_args) or ["--model", str(model)]
    cmd = [str(engine.server_path), *model_args, "--listen-ip", settings.host, "--listen-port", str(port)]
    if settings.threads > 0:
        cmd += ["--threads", str(settings.threads)]
    return cmd


def whisper_command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
    """whisper.cpp's whisper-server: the model, a loopback port, the threads. The language is asked
    per request (``language`` in the multipart form), so one engine serves every language."""
    cmd = [str(engine.server_path), "-m", str(model), "--host", settings.host, "--port", str(port)]
    if settings.threads > 0:
        cmd += ["-t", str(settings.threads)]
    if engine.backend == "cpu":
        cmd.append("-ng")  # a CPU build must not look for a GPU backend it was not built with
    return cmd


def llama_env(settings: ServerSettings) -> dict[str, str]:
    """Variables for options whose flag differs between llama.cpp builds.

    Memory-mapping is off with ``--no-mmap`` on older builds and ``--load-mode none`` on newer
    ones, and each rejects the other's flag; llama.cpp reads every option from ``LLAMA_ARG_*``
    too and ignores variables it does not know, so both spellings go in the environment.

    The draft limits moved from ``--draft-max/--draft-min`` (now a start error) to
    ``--spec-draft-n-max/-min``, and newer builds need ``--spec-type draft-simple`` to use a plain
    draft GGUF at all; the new names go in the environment, which older builds ignore (they then
    draft with their default limits).

    The engine's API key (``settings.api_key``) goes in ``LLAMA_API_KEY`` and CORS is closed
    (see the comments below).
    """
    env: dict[str, str] = {}
    if settings.api_key:
        # In the environment, not on the command line: other users of the computer can read a
        # process's command line (ps), not its environment.
        env["LLAMA_API_KEY"] = settings.api_key
    # No cross-site use from a browser: by default the server reflects any Origin with
    # credentials allowed. "localhost" reflects loopback origins only (they still need the key);
    # builds without these options ignore the variables.
    env.update({"LLAMA_ARG_CORS_ORIGINS": "localhost", "LLAMA_ARG_CORS_CREDENTIALS": "0"})
    if not settings.mmap:
        env.update({"LLAMA_ARG_MMAP": "0", "LLAMA_ARG_LOAD_MODE": "none"})
    if settings.parallel > 1:
        # Several slots, each with its own share of "-c" (the context a request gets), decoded
        # together by continuous batching. Not one unified buffer: builds without the per-slot
        # cap (the pinned Vulkan build) then let one request take the whole of it.
        env["LLAMA_ARG_KV_UNIFIED"] = "0"
    if settings.draft_model:
        env["LLAMA_ARG_SPEC_TYPE"] = "draft-simple"
        if settings.draft_max > 0:
            env["LLAMA_ARG_SPEC_DRAFT_N_MAX"] = str(settings.draft_max)
        if settings.draft_min > 0:
            env["LLAMA_ARG_SPEC_DRAFT_N_MIN"] = str(settings.draft_min)
    return env


# -- the kinds ----------------------------------------------------------------------------------------
TEXT = EngineKind(
    name="text", label="chat", builds="text", binary="llama-server", project="llama.cpp", lists_devices=True,
    ready_path="/health", command=llama_command, environment=llama_env, scrub_env=without_agent_tools_env,
    apis=frozenset({OPENAI_CHAT, ANTHROPIC, RESPONSES}), follows_choices=True, kv_cache=True, takes_key=True,
    parallel_slots=True,
)
IMAGE = EngineKind(
    name="image", label="image", builds="image", binary="sd-server", project="stable-diffusion.cpp",
    # sd-server listens only once the model is loaded: its first answer means "ready".
    lists_devices=False, ready_path="/sdcpp/v1/capabilities", command=sd_command,
    apis=frozenset({SDCPP, OPENAI_IMAGES}), subject=QT_TRANSLATE_NOOP("Core", "{engine} image engine"), id_prefix="image-",
    load_timeout=600.0,  # diffusion models with their text encoders load slowly on a CPU
    # GGUF or safetensors checkpoints: no file-format filter (the hub ANDs its filters).
    hub_search=(("pipeline_tag", "text-to-image"),),
)
EMBEDDING = EngineKind(
    name="embedding", label="embedding", builds="text", binary="llama-server", project="llama.cpp",
    lists_devices=True, ready_path="/health", command=embedding_command, environment=llama_env,
    scrub_env=without_agent_tools_env,
    apis=frozenset({EMBEDDINGS}), subject=QT_TRANSLATE_NOOP("Core", "{engine} embedding engine"), kv_cache=True, takes_key=True,
    parallel_slots=True,
    hub_search=(("filter", "gguf"), ("pipeline_tag", "feature-extraction")),
)
# Rerankers (pooling type "rank": a classifier head scores a query against each document): the same
# llama.cpp builds, started with --reranking; they answer /v1/rerank (and /rerank) only.
RERANKER = EngineKind(
    name="rerank", label="reranker", builds="text", binary="llama-server", project="llama.cpp",
    lists_devices=True, ready_path="/health", command=rerank_command, environment=llama_env,
    scrub_env=without_agent_tools_env,
    apis=frozenset({RERANK}), subject=QT_TRANSLATE_NOOP("Core", "{engine} reranker engine"), kv_cache=True,
    takes_key=True, parallel_slots=True,
    hub_search=(("filter", "gguf"), ("pipeline_tag", "text-ranking")),
)
SPEECH = EngineKind(
    name="speech", label="speech", builds="speech", binary="whisper-server", project="whisper.cpp",
    # whisper-server loads the model before it listens; /health answers 200 once it is loaded.
    lists_devices=False, ready_path="/health", command=whisper_command, probe_args=("--help",), about_paths=(),
    apis=frozenset({WHISPER_INFERENCE}), subject=QT_TRANSLATE_NOOP("Core", "{engine} speech engine"),
    id_prefix="speech-", load_timeout=120.0,
    # Speech-recognition repos; those holding whisper.cpp's ggml-*.bin files are told by their
    # files when opened (core/models/speech_models.py), the others list no file to download.
    hub_search=(("pipeline_tag", "automatic-speech-recognition"),),
)
KINDS: tuple[EngineKind, ...] = (TEXT, IMAGE, EMBEDDING, RERANKER, SPEECH)
"""The kinds Strata ships (what stored names are read back as)."""
INSTALLABLE: tuple[EngineKind, ...] = tuple(k for k in KINDS if k.builds == k.name)
"""The kinds that have builds of their own to install (the others borrow another kind's)."""


def kind_named(name: str | EngineKind | None, default: EngineKind = TEXT) -> EngineKind:
    """The shipped kind stored as ``name`` (``default`` for None or "", as in manifests written
    before kinds existed).

    Raises:
        ValueError: no shipped kind has that name.
    """
    if isinstance(name, EngineKind):
        return name
    if not name:
        return default
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise ValueError(f"unknown engine kind {name!r} (known: {', '.join(k.name for k in KINDS)})")
