"""llama-server's own agent tools (--tools, --agent, --mcp-servers-config ...) are never turned on.

The pinned server runs built-in shell/file tools and stdio MCP servers with the engine's
privileges and no approval when started with them (common/arg.cpp); Strata's tools go through its
own MCP host instead. These tests build the command line for every combination of launch
settings the app produces, try to smuggle the flags in through ``extra_args`` and the
environment, and start the real engine with them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from strata_gui.core.config.settings import Settings
from strata_gui.core.models.load_options import CACHE_TYPES, FLASH_ATTENTION, LoadOptions
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import (
    AGENT_TOOL_ENV,
    AGENT_TOOL_SWITCHES,
    AGENT_TOOL_VALUE_FLAGS,
    without_agent_tools,
    without_agent_tools_env,
)
from strata_gui.core.runtime.kinds import llama_command as build_command
from strata_gui.core.runtime.kinds import llama_env as launch_env
from strata_gui.core.runtime.launch import ServerSettings, free_loopback_port
from strata_gui.core.runtime.supervisor import ServerSupervisor
from tests.runtime.conftest import cpu_spec
from tests.support import engines as _engines

FORBIDDEN = AGENT_TOOL_VALUE_FLAGS | AGENT_TOOL_SWITCHES


def _normalized(arg: str) -> str:
    return arg.replace("_", "-") if arg.startswith("--") else arg  # as llama.cpp reads it


def _assert_no_agent_flags(cmd: list[str]) -> None:
    found = [a for a in cmd if _normalized(a) in FORBIDDEN]
    assert not found, (found, cmd)


def test_the_flag_lists_match_the_pinned_source(llama_source: Path) -> None:
    """Every option of the pinned arg.cpp whose help says it enables tools/MCP is on the lists."""
    src = llama_source / "common" / "arg.cpp"
    text = src.read_text(encoding="utf-8")
    for flag in FORBIDDEN:
        assert f'"{flag}"' in text, flag
    for var in AGENT_TOOL_ENV:
        assert f'set_env("{var}")' in text, var
    # Nothing new of the kind: each option mentioning MCP or built-in tools is known.
    blocks = text.split("add_opt(common_arg(")
    risky = [b.split(")", 1)[0] for b in blocks
             if "do not enable in untrusted environments" in b and ("tools" in b.lower() or "mcp" in b.lower())]
    names = {n for b in risky for n in b.replace("{", " ").replace("}", " ").replace(",", " ").split()
             if n.startswith('"-')}
    assert {'"--tools"', '"--agent"', '"--mcp-servers-config"'} <= names  # the scan sees them
    assert {n.strip('"') for n in names} - {"--no-ui-mcp-proxy", "--no-webui-mcp-proxy", "-no-ag", "--no-agent"} \
        <= FORBIDDEN


def test_no_launch_setting_combination_turns_them_on(tmp_path: Path) -> None:
    engines = [EngineSpec(f"{b}-x", b, b, tmp_path / "llama-server", {}) for b in ("cpu", "vulkan", "rocm")]
    model = tmp_path / "model.gguf"
    settings_values = [ServerSettings.from_settings(Settings()),
                       ServerSettings.from_settings(Settings(context_size=32768, gpu_layers="auto",
                                                             flash_attention="on", threads=8, parallel_slots=4))]
    count = 0
    for base, engine in itertools.product(settings_values, engines):
        # Every load option the panel and the CLI offer, as LoadOptions turns them into settings.
        for gpu_layers, fa, ctk, ctv, batch, mmap, draft in itertools.product(
                ("all", "auto", "0", "33"), FLASH_ATTENTION, CACHE_TYPES, CACHE_TYPES, ((0, 0), (2048, 512)),
                (True, False), ("", str(tmp_path / "draft.gguf"))):
            options = LoadOptions(gpu_layers=gpu_layers, flash_attention=fa, cache_type_k=ctk, cache_type_v=ctv,
                                  batch_size=batch[0], ubatch_size=batch[1], mmap=mmap, draft_model=draft,
                                  draft_max=16 if draft else 0, threads=base.threads, parallel=base.parallel)
            settings = options.server_settings(base)
            # What the chat (projector), the benchmark (no jinja/metrics), serve (an API key) and the
            # RPC pool (--rpc) change on top.
            for mmproj, bench, key, rpc in itertools.product(
                    ("", str(tmp_path / "mmproj.gguf")), (False, True), ("", "strata-key"), (False, True)):
                s = dataclasses.replace(settings, mmproj=mmproj, api_key=key)
                if bench:
                    s = dataclasses.replace(s, parallel=1, jinja=False, metrics=False)
                if rpc:
                    s = dataclasses.replace(s, extra_args=(*s.extra_args, "--rpc", "10.0.0.2:50052,10.0.0.3:50052"))
                _assert_no_agent_flags(build_command(engine, model, s, 8080))
                assert not set(launch_env(s)) & set(AGENT_TOOL_ENV)
                count += 1
    assert count == 2 * 3 * 4 * 3 * 3 * 3 * 2 * 2 * 2 * 16


def test_extra_args_cannot_smuggle_them_in() -> None:
    smuggled = ("--rpc", "h:1", "--tools", "all", "--agent", "-ag", "--mcp_servers_config", "/tmp/mcp.json",
                "--mcp-servers-json", '{"mcpServers": {}}', "--tools-runtime", "docker:img", "--ui-mcp-proxy",
                "--webui_mcp_proxy", "--no-agent", "-c", "1024")
    settings = ServerSettings(extra_args=smuggled)
    cmd = build_command(EngineSpec("x", "CPU", "cpu", Path("llama-server"), {}), Path("m.gguf"), settings, 1)
    _assert_no_agent_flags(cmd)
    assert "/tmp/mcp.json" not in cmd and "all" not in cmd and "docker:img" not in cmd
    assert cmd[-5:] == ["--rpc", "h:1", "--no-agent", "-c", "1024"]  # the rest is kept, in order
    assert without_agent_tools(["--tools"]) == []  # a flag at the end, with no value
    env = without_agent_tools_env({"LLAMA_ARG_TOOLS": "all", "llama_arg_agent": "1", "PATH": "/bin",
                                   "LLAMA_ARG_MCP_SERVERS_JSON": "{}", "LLAMA_ARG_CTX_SIZE": "512"})
    assert env == {"PATH": "/bin", "LLAMA_ARG_CTX_SIZE": "512"}


@pytest.mark.engine
def test_the_real_engine_runs_without_them_whatever_is_smuggled_in(test_engines: _engines.TestEngines,
                                                                   test_model: Path, tmp_path: Path) -> None:
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    environ = {"LLAMA_ARG_TOOLS": "all", "LLAMA_ARG_AGENT": "1", "LLAMA_ARG_UI_MCP_PROXY": "1"}
    settings = ServerSettings(ctx_size=512, extra_args=("--tools", "get_info", "--agent", "--mcp-servers-config",
                                                        str(mcp)))

    async def scenario() -> tuple[int, bool]:
        async with httpx.AsyncClient(trust_env=False) as http:
            sup = ServerSupervisor(cpu_spec(test_engines), test_model, settings, http=http,
                                   environ={**os.environ, **environ})
            try:
                base = await sup.start()
                tools = (await http.get(base + "/tools", headers=sup.auth_headers())).status_code
                props = (await http.get(base + "/props", headers=sup.auth_headers())).json()
                return tools, bool(props.get("cors_proxy_enabled"))
            finally:
                await sup.stop()

    assert asyncio.run(scenario()) == (403, False)
    # The same engine started by hand with the flag does serve /tools: the check above can fail.
    port = free_loopback_port()
    proc = subprocess.Popen([str(test_engines.cpu_server), "-m", str(test_model), "-c", "512", "--port", str(port),
                             "--tools", "get_info"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        status = 0
        for _ in range(600):
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/tools", timeout=2, trust_env=False).status_code
            except httpx.HTTPError:
                status = 0
            if status not in (0, 503):
                break
            time.sleep(0.1)
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
