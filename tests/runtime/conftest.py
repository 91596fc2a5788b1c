"""Helpers for runtime tests: engine specs over the real test engines, broken engine folders."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from strata_gui.core.runtime.engine import EngineSpec
from tests.support import engines as _engines

Engines = _engines.TestEngines


def cpu_spec(engines: Engines) -> EngineSpec:
    return EngineSpec("cpu-test", "CPU", "cpu", engines.cpu_server, {})


def vulkan_spec(engines: Engines) -> EngineSpec:
    env = engines.vulkan_env({})
    return EngineSpec("vulkan-test", "Vulkan", "vulkan", engines.vulkan_server, env)


def rocm_without_libraries(engines: Engines, root: Path) -> EngineSpec:
    """The real Vulkan server copied alone: the dynamic loader cannot find its libraries."""
    folder = root / "rocm-nolibs"
    folder.mkdir()
    shutil.copy2(engines.vulkan_server, folder / "llama-server")
    return EngineSpec("rocm-nolibs", "ROCm", "rocm", folder / "llama-server", {"LD_LIBRARY_PATH": str(folder)})


CRASH_WRAPPER = '''#!{python}
"""Runs the real llama-server and crashes (SIGSEGV) once it starts loading the model."""
import os, signal, subprocess, sys
real = {real!r}
env = dict(os.environ, LD_LIBRARY_PATH={libdir!r})
p = subprocess.Popen([real, *sys.argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
for line in p.stdout:
    sys.stdout.write(line)
    sys.stdout.flush()
    if "loading model" in line:
        p.kill()
        p.wait()
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
sys.exit(p.wait())
'''


def rocm_crashing_during_load(engines: Engines, root: Path) -> EngineSpec:
    """A wrapper that starts the real Vulkan server and segfaults as soon as loading begins."""
    folder = root / "rocm-crash"
    folder.mkdir()
    exe = folder / "llama-server"
    exe.write_text(CRASH_WRAPPER.format(python=sys.executable, real=str(engines.vulkan_server),
                                        libdir=str(engines.vulkan_dir)))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return EngineSpec("rocm-crash", "ROCm", "rocm", exe, engines.vulkan_env({}))


@pytest.fixture
def env_base() -> dict[str, str]:
    return dict(os.environ)


def templated_model(folder: Path, llama_src: Path, template: str) -> Path:
    """A random-weight model with Qwen2's real BPE vocab and one of the source's real chat templates
    (``models/templates/<template>.jinja``)."""
    from tests.support import gguf_model

    text = (llama_src / "models" / "templates" / f"{template}.jinja").read_text()
    spec = gguf_model.ModelSpec(vocab="qwen2", chat_template=text, name=template)
    return gguf_model.write_model(folder / f"{template}.gguf", spec)


@pytest.fixture(scope="session")
def r1_model(_models_dir: Path, test_engines: Engines) -> Path:
    """DeepSeek-R1-Distill-Qwen: its generation prompt opens ``<think>``, so every token is thinking."""
    return templated_model(_models_dir, test_engines.llama_src, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")


@pytest.fixture(scope="session")
def functionary_model(_models_dir: Path, test_engines: Engines) -> Path:
    """Functionary v3.2: with ``tool_choice: "required"`` its grammar starts the reply with a tool call;
    without tools, random text fails its chat-format parser at once (the engine's "peg-native" error)."""
    return templated_model(_models_dir, test_engines.llama_src, "meetkai-functionary-medium-v3.2")
