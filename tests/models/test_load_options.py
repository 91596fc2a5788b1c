"""Load options per model: the KV-cache types in the fit (checked against a real llama-server),
verdicts that follow the options, storage by model identity, and every option on the real engine's
command line (read from the running process with psutil), through the composed core and the CLI."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from strata_gui.cli import main
from strata_gui.core.app_services import build_app_services
from strata_gui.core.base.errors import SettingsError
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.services import build_services
from strata_gui.core.models import LoadOptions, LoadOptionsService, Verdict
from strata_gui.core.models.fit import MIB, MemoryTarget
from strata_gui.core.runtime import ServerState
from tests.support import gguf_model
from tests.support.engines import TestEngines, free_port
from tests.support.poll import until
from tests.support.settings import settings_service

KV_LINE = re.compile(r"KV buffer size\s*=\s*([0-9.]+)\s*MiB")


@pytest.fixture(scope="module")
def wide_model(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> Path:
    """The test llama with 32-value heads: llama.cpp quantises the cache per head in blocks of 32
    (the 16-value heads of the small test model cannot take a q8_0 cache with flash attention)."""

    path = tmp_path_factory.mktemp("wide") / "strata-test-llama-wide-F16.gguf"
    return gguf_model.write_model(path, gguf_model.ModelSpec(width=128, heads=4, kv_heads=2))


def _service(target: MemoryTarget | None = None, ram: int = 64 << 30) -> LoadOptionsService:
    paths = AppPaths.from_environment()
    return LoadOptionsService(paths.data_dir / "load_options.json", settings_service(context_size=2048),
                              lambda: target or MemoryTarget("GPU", 8 << 30), ram)


def _reported_kv_mib(exe: Path, model: Path, log: Path, *flags: str) -> float:
    """Start the real llama-server with ``flags``, read the KV buffer size it logs, stop it."""
    cmd = [str(exe), "-m", str(model), "-c", "2048", "-np", "1", "--host", "127.0.0.1",
           "--port", str(free_port()), "-lv", "4", *flags]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                found = KV_LINE.findall(log.read_text(errors="replace"))
                if found:
                    return sum(float(x) for x in found)
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
            raise AssertionError(f"no KV buffer line in llama-server output:\n{log.read_text()[-2000:]}")
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.engine
def test_quantised_kv_cache_takes_34_and_18_64ths_as_the_real_engine_allocates(
        test_engines: TestEngines, wide_model: Path, tmp_path: Path) -> None:
    svc = _service()
    shape = asyncio.run(svc.shape(wide_model))
    f16, q8, q4 = (shape.kv_bytes(2048, t, t) for t in ("f16", "q8_0", "q4_0"))
    assert q8 * 64 == f16 * 34 and q4 * 64 == f16 * 18  # exactly: blocks of 32 values
    for cache_type, expected in (("f16", f16), ("q8_0", q8), ("q4_0", q4)):
        reported = _reported_kv_mib(test_engines.cpu_server, wide_model, tmp_path / f"{cache_type}.log",
                                    "-fa", "on", "-ctk", cache_type, "-ctv", cache_type)
        assert expected / MIB == pytest.approx(reported, abs=0.01), cache_type
    # Mixed: K and V are counted with their own types.
    assert shape.kv_bytes(2048, "q8_0", "f16") == (f16 + q8) // 2


@pytest.mark.engine
def test_the_verdict_follows_the_options(wide_model: Path) -> None:
    probe = _service()
    shape = asyncio.run(probe.shape(wide_model))
    base = LoadOptions(ctx_size=4096, parallel=1)  # (automatic slots: see the next test)
    q8 = base.replace(cache_type_k="q8_0", cache_type_v="q8_0")
    need_q8 = probe.fit(shape, q8).total_bytes
    need_f16 = probe.fit(shape, base).total_bytes
    assert need_q8 < need_f16
    # A GPU with room for the q8_0 cache but not the f16 one.
    svc = _service(MemoryTarget("Test GPU", need_q8 + (need_f16 - need_q8) // 2))
    assert svc.fit(shape, base).verdict is Verdict.PARTIAL
    assert svc.fit(shape, q8).verdict is Verdict.FULL_GPU
    # Fewer GPU layers asked for: partial with exactly that many; none: the processor.
    capped = svc.fit(shape, q8.replace(gpu_layers="1"))
    assert (capped.verdict, capped.gpu_layers) == (Verdict.PARTIAL, 1)
    assert svc.fit(shape, q8.replace(gpu_layers="0")).verdict is Verdict.CPU_ONLY
    # A smaller micro-batch shrinks the compute buffer; a longer context grows the KV cache.
    assert svc.fit(shape, q8.replace(ubatch_size=128)).compute_bytes < svc.fit(shape, q8).compute_bytes
    assert svc.fit(shape, q8.replace(ctx_size=512)).kv_bytes * 8 == svc.fit(shape, q8).kv_bytes


@pytest.mark.engine
def test_automatic_parallel_requests_are_as_many_as_fit_at_most_four(wide_model: Path) -> None:
    probe = _service()
    shape = asyncio.run(probe.shape(wide_model))
    one = LoadOptions(ctx_size=4096, parallel=1)
    need = {n: probe.fit(shape, one.replace(parallel=n)).total_bytes for n in (1, 2, 3)}
    assert need[1] < need[2] < need[3]  # each request's cache counts
    # Room for two requests' caches but not three: automatic gives two, each with the whole context.
    svc = _service(MemoryTarget("Test GPU", need[2] + (need[3] - need[2]) // 2))
    auto = svc.fit(shape, one.replace(parallel=0))
    assert (auto.verdict, auto.slots, auto.n_ctx) == (Verdict.FULL_GPU, 2, 4096)
    assert svc.slots(wide_model, one.replace(parallel=0)) == 2
    assert svc.fit(shape, one.replace(parallel=3)).verdict is Verdict.PARTIAL  # asked for: honoured
    # Plenty of room: four, never more.
    assert _service().fit(shape, one.replace(parallel=0)).slots == 4
    # Too little memory for even one: one (the verdict says it won't fit).
    tiny = _service(MemoryTarget("Tiny GPU", need[1] // 4), ram=need[1] // 4).fit(shape, one.replace(parallel=0))
    assert (tiny.verdict, tiny.slots) == (Verdict.WONT_FIT, 1)


@pytest.mark.engine
def test_options_that_cannot_load_are_named_and_never_saved(test_model: Path, wide_model: Path) -> None:
    svc = _service()
    small = asyncio.run(svc.shape(test_model))
    bad_v = LoadOptions(flash_attention="off", cache_type_v="q8_0")
    assert any("needs flash attention" in p for p in bad_v.problems())
    with pytest.raises(SettingsError, match="needs flash attention"):
        svc.save(wide_model, bad_v)
    assert svc.saved(wide_model) == {}
    # The small model's 16-value heads cannot hold q8_0 blocks with flash attention (llama.cpp refuses).
    assert any("16 values" in p for p in svc.problems(small, LoadOptions(cache_type_k="q8_0")))
    assert svc.problems(small, LoadOptions(cache_type_k="q8_0", flash_attention="off")) == []


@pytest.mark.engine
def test_saved_per_model_identity(wide_model: Path, test_model: Path, tmp_path: Path) -> None:
    svc = _service()
    assert svc.options(wide_model) == LoadOptions(ctx_size=2048)  # Settings' context until one is saved
    chosen = LoadOptions(ctx_size=1024, cache_type_k="q8_0", cache_type_v="q4_0", threads=2, mmap=False)
    svc.save(wide_model, chosen)
    moved = tmp_path / "renamed.gguf"
    shutil.copy(wide_model, moved)
    again = _service()  # a new run reads the file in the data folder
    assert again.options(moved) == chosen  # same model under another name keeps its options
    assert again.options(test_model) == LoadOptions(ctx_size=2048)  # another model does not share them
    again.forget(moved)
    assert _service().options(wide_model) == LoadOptions(ctx_size=2048)


def _cmdline_value(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


@pytest.mark.engine
def test_every_option_reaches_the_running_engine(test_engines: TestEngines, wide_model: Path) -> None:
    """The composed core launches the chat's engine with the model's saved options."""

    async def scenario() -> None:
        app = build_app_services(build_services())
        try:
            await app.prepare()
            await app.resolver.use_folder(test_engines.cpu_dir)
            app.load_options.save(wide_model, LoadOptions(
                ctx_size=768, flash_attention="on", cache_type_k="q8_0", cache_type_v="q4_0", batch_size=256,
                ubatch_size=128, threads=2, mmap=False, parallel=2))
            app.chat.set_model(wide_model, remember=False)
            app.chat.set_plan(app.resolver.plan_for(wide_model))
            await app.chat.ensure_engine()
            sup = app.chat.supervisor
            assert sup is not None and sup.state is ServerState.READY and sup.pid is not None
            proc = psutil.Process(sup.pid)
            cmd = proc.cmdline()
            assert {flag: _cmdline_value(cmd, flag) for flag in ("-c", "-fa", "-ctk", "-ctv", "-b", "-ub", "-t", "-np")} \
                == {"-c": "1536", "-fa": "on", "-ctk": "q8_0", "-ctv": "q4_0", "-b": "256", "-ub": "128", "-t": "2",
                    "-np": "2"}  # -c: the two slots' cache, 768 tokens each
            await until(lambda: "n_ctx_slot = 768" in "\n".join(sup.log_tail()), 10)
            # mmap off goes by environment: the pinned builds disagree on the flag's spelling.
            assert proc.environ().get("LLAMA_ARG_LOAD_MODE") == "none"
            # (the log is read on its own thread: the lines may land a moment after ready)
            await until(lambda: "n_slots = 2" in "\n".join(sup.log_tail()), 10)
            assert "n_threads = 2" in "\n".join(sup.log_tail())
            # Changing the options reloads the engine at the next message, with the new ones.
            app.load_options.save(wide_model, app.load_options.options(wide_model).replace(cache_type_k="f16"))
            await app.chat.ensure_engine()
            new = app.chat.supervisor
            assert new is not None and new.pid != proc.pid
            assert "-ctk" not in psutil.Process(new.pid).cmdline()
        finally:
            await app.aclose()

    asyncio.run(scenario())


@pytest.mark.engine
def test_gpu_layers_reach_the_vulkan_engine(test_engines: TestEngines, wide_model: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")  # llvmpipe is this machine's Vulkan device

    async def scenario() -> None:
        app = build_app_services(build_services())
        try:
            await app.prepare()
            spec = await app.resolver.use_folder(test_engines.vulkan_dir)
            assert spec.backend == "vulkan"
            app.load_options.save(wide_model, LoadOptions(ctx_size=512, gpu_layers="1"))
            app.chat.set_model(wide_model, remember=False)
            app.chat.set_plan([spec])
            await app.chat.ensure_engine()
            sup = app.chat.supervisor
            assert sup is not None and sup.pid is not None
            assert _cmdline_value(psutil.Process(sup.pid).cmdline(), "-ngl") == "1"
        finally:
            await app.aclose()

    asyncio.run(scenario())


@pytest.mark.engine
def test_cli_chat_passes_the_options_to_the_running_engine(test_engines: TestEngines, wide_model: Path) -> None:
    """`strata chat --cache-type-k ...` in its own process: the engine it starts is read with psutil."""
    cmd = [sys.executable, "-c", "import sys; from strata_gui.cli import main; sys.exit(main())",
           "chat", "-m", str(wide_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "640",
           "--cache-type-k", "q8_0", "--cache-type-v", "q8_0", "--flash-attn", "on", "--batch-size", "128",
           "--ubatch-size", "64", "--threads", "1", "--parallel", "1", "--no-mmap", "--max-tokens", "300",
           "--seed", "1", "--temperature", "0",
           "--json", "Tell me a long story"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    env: dict[str, str] = {}
    try:
        parent = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60
        while not seen and proc.poll() is None and time.monotonic() < deadline:
            for child in parent.children(recursive=True):
                try:
                    cmdline = child.cmdline()
                    if "llama-server" in child.name() and "-m" in cmdline:  # not the --version probe
                        seen, env = cmdline, child.environ()
                except psutil.Error:
                    continue
            time.sleep(0.02)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert json.loads(out)["reply"]
    assert seen, "the engine was never seen running"
    assert [_cmdline_value(seen, f) for f in ("-c", "-ctk", "-ctv", "-fa", "-b", "-ub", "-t", "-np")] == \
        ["640", "q8_0", "q8_0", "on", "128", "64", "1", "1"]
    assert env.get("LLAMA_ARG_LOAD_MODE") == "none"


@pytest.mark.engine
def test_cli_inspect_shows_the_fit_with_the_options(wide_model: Path, test_model: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def inspect(model: Path, *flags: str) -> dict[str, object]:
        capsys.readouterr()
        assert main(["models", "inspect", str(model), "--ctx-size", "2048", *flags, "--json"]) == 0
        data: dict[str, object] = json.loads(capsys.readouterr().out)
        return data

    f16 = inspect(wide_model)
    q8 = inspect(wide_model, "--cache-type-k", "q8_0", "--cache-type-v", "q8_0")
    kv16 = f16["memory"]["kv_bytes_n_ctx"]  # type: ignore[index]
    kv8 = q8["memory"]["kv_bytes_n_ctx"]  # type: ignore[index]
    assert kv8 * 64 == kv16 * 34
    assert q8["load_options"]["cache_type_k"] == "q8_0" and q8["problems"] == []  # type: ignore[index]
    small = inspect(test_model, "--cache-type-k", "q8_0")
    assert "16 values" in small["problems"][0]  # type: ignore[index]
    capsys.readouterr()
    assert main(["models", "inspect", str(wide_model), "--cache-type-v", "q4_0", "--flash-attn", "off"]) == 1
    assert "needs flash attention" in capsys.readouterr().err
