"""Where the real test engines live (built/fetched by scripts/test-engines.sh) and how to run them."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

CACHE = Path(os.environ.get("STRATA_DEV_CACHE", Path.home() / ".cache" / "strata-dev"))


@dataclass(frozen=True)
class TestEngines:
    """Folders holding a real ``llama-server``: the CPU build and the prebuilt Vulkan build, and
    the CPU ``sd-server`` + ``sd-cli`` of stable-diffusion.cpp (None when not built yet)."""

    __test__ = False  # not a pytest test class

    cpu_dir: Path
    vulkan_dir: Path
    llama_src: Path
    sd_dir: Path | None = None
    whisper_dir: Path | None = None  # bin/ of the CPU whisper.cpp build; its samples/ and models/ beside it

    @property
    def sd_server(self) -> Path:
        """The CPU ``sd-server``; raises with the fix when scripts/test-engines.sh did not build it."""
        if self.sd_dir is None or not (self.sd_dir / "sd-server").exists():
            raise FileNotFoundError("sd-server missing: run scripts/test-engines.sh")
        return self.sd_dir / "sd-server"

    @property
    def sd_cli(self) -> Path:
        if self.sd_dir is None or not (self.sd_dir / "sd-cli").exists():
            raise FileNotFoundError("sd-cli missing: run scripts/test-engines.sh")
        return self.sd_dir / "sd-cli"

    @property
    def whisper_server(self) -> Path:
        """The CPU ``whisper-server``; raises with the fix when scripts/test-engines.sh did not build it."""
        if self.whisper_dir is None or not (self.whisper_dir / "whisper-server").exists():
            raise FileNotFoundError("whisper-server missing: run scripts/test-engines.sh")
        return self.whisper_dir / "whisper-server"

    @property
    def whisper_cli(self) -> Path:
        return self.whisper_server.with_name("whisper-cli")

    @property
    def whisper_sample(self) -> Path:
        """whisper.cpp's own sample recording (samples/jfk.wav: 11 s, 16 kHz mono)."""
        return self.whisper_server.parent.parent / "samples" / "jfk.wav"

    def whisper_vocab_model(self, name: str = "tiny.en") -> Path:
        """One of whisper.cpp's vocab-only test models (models/for-tests-ggml-NAME.bin)."""
        return self.whisper_server.parent.parent / "models" / f"for-tests-ggml-{name}.bin"

    @property
    def cpu_server(self) -> Path:
        return self.cpu_dir / "llama-server"

    @property
    def vulkan_server(self) -> Path:
        return self.vulkan_dir / "llama-server"

    def vulkan_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment under which the Vulkan build sees Mesa's llvmpipe as ``Vulkan0``."""
        env = dict(os.environ if base is None else base)
        env["LD_LIBRARY_PATH"] = str(self.vulkan_dir)
        env["GGML_VK_VISIBLE_DEVICES"] = "0"
        return env


# Set by ``scripts/check --fast``: the fast tier runs no engine, so a test that reaches one without
# the ``engine`` mark fails there at once, as it would on a machine that never built the engines.
NO_ENGINES = "STRATA_TEST_NO_ENGINES"


def _cache_values() -> dict[str, str]:
    """``engines.env`` (what scripts/test-engines.sh put into the cache), then ``STRATA_TEST_*``."""
    env_file = CACHE / "engines.env"
    values: dict[str, str] = {}
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                values[k] = v
    values.update({k: v for k, v in os.environ.items() if k.startswith("STRATA_TEST_")})
    return values


def locate_source() -> Path:
    """The pinned llama.cpp source tree (real vocabularies and chat templates for the test models);
    ``scripts/test-engines.sh --source`` fetches it without building anything."""
    src = _cache_values().get("STRATA_TEST_LLAMA_SRC")
    if not src or not Path(src).is_dir():
        raise FileNotFoundError("llama.cpp source not found: run scripts/test-engines.sh --source")
    return Path(src)


def locate() -> TestEngines:
    """Read ``engines.env`` written by scripts/test-engines.sh; raise with the fix if missing."""
    if os.environ.get(NO_ENGINES):
        raise RuntimeError("this test starts a real engine but is not marked `engine` (the fast tier runs "
                           "none): take the test_engines fixture, which marks it")
    values = _cache_values()
    try:
        engines = TestEngines(
            Path(values["STRATA_TEST_CPU_ENGINE"]),
            Path(values["STRATA_TEST_VULKAN_ENGINE"]),
            Path(values["STRATA_TEST_LLAMA_SRC"]),
            Path(values["STRATA_TEST_SD_ENGINE"]) if values.get("STRATA_TEST_SD_ENGINE") else None,
            Path(values["STRATA_TEST_WHISPER_ENGINE"]) if values.get("STRATA_TEST_WHISPER_ENGINE") else None,
        )
    except KeyError as exc:
        raise FileNotFoundError(f"test engines not set up ({exc}): run scripts/test-engines.sh") from exc
    for exe in (engines.cpu_server, engines.vulkan_server):
        if not exe.exists():
            raise FileNotFoundError(f"{exe} missing: run scripts/test-engines.sh")
    return engines


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(
    exe: Path, model: Path, *, env: Mapping[str, str] | None = None, extra: list[str] | None = None,
    timeout: float = 120.0, ctx: int = 512,
) -> Iterator[str]:
    """Start a real llama-server on a free loopback port; yield its base URL; always stop it."""
    port = free_port()
    cmd = [str(exe), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", str(ctx),
           "--jinja", *(extra or [])]
    proc = subprocess.Popen(cmd, env=dict(env or os.environ), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                raise RuntimeError(f"llama-server exited {proc.returncode}:\n{err[-3000:]}")
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("llama-server did not become ready")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


def bench_engine_and_model() -> tuple[Path, Path]:
    """The CPU test engine's folder and the generated test model (written once to the temp folder):
    what the bench scripts run on when not given ``--engine`` and ``--model``."""
    engines = locate()
    import tempfile

    model = Path(tempfile.gettempdir()) / "strata-bench-model.gguf"
    if not model.exists():  # (gguf and numpy only then: a venv without the dev extra can re-run a bench)
        from tests.support import gguf_model

        gguf_model.write_model(model)
    return engines.cpu_dir, model


@contextmanager
def bench_profile(prefix: str) -> Iterator[tuple[TestEngines, Path]]:
    """The CPU test engines and a throw-away Strata profile for a bench script: Strata's folders in a
    temporary folder, the captured CPU-only machine as the GPU tree, the llama.cpp source for
    generated models. Yields (engines, the profile's root)."""
    import tempfile

    engines = locate()
    os.environ.setdefault("STRATA_TEST_LLAMA_SRC", str(engines.llama_src))
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        for name in ("CONFIG", "DATA", "CACHE", "LOG"):
            os.environ[f"STRATA_{name}_DIR"] = str(root / name.lower())
        os.environ["STRATA_SYSFS_ROOT"] = str(Path(__file__).resolve().parents[1] / "data/gpu/linux/no-gpu")
        yield engines, root
