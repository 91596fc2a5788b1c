"""The engine resolver: engine choices follow the model's identity and the GPU, not the file name."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.models.identity import model_identity
from tests.support import gguf_model
from tests.support.engines import TestEngines

TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"


def test_identity_of_hub_cache_files_ignores_the_revision(tmp_path: Path, test_model: Path) -> None:
    a = tmp_path / "hub" / "models--org--Model-GGUF" / "snapshots" / "aaaa" / "model-Q4_K_M.gguf"
    b = tmp_path / "hub" / "models--org--Model-GGUF" / "snapshots" / "bbbb" / "model-Q4_K_M.gguf"
    for p in (a, b):
        p.parent.mkdir(parents=True)
        shutil.copy(test_model, p)
    assert model_identity(a) == model_identity(b) == "hf:org/Model-GGUF/model-Q4_K_M.gguf"


def test_identity_of_other_files_follows_their_content(tmp_path: Path, test_model: Path) -> None:
    renamed = tmp_path / "renamed.gguf"
    shutil.copy(test_model, renamed)
    other = gguf_model.write_model(tmp_path / "other" / test_model.name, gguf_model.ModelSpec(seed=99))
    assert model_identity(renamed) == model_identity(test_model)
    assert model_identity(other) != model_identity(test_model)  # same file name, another model


@pytest.mark.engine
def test_a_chosen_engine_follows_the_model_and_the_gpu(tmp_path: Path, test_model: Path, test_engines: TestEngines,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(TREES / "rx7900xtx"))
    renamed = tmp_path / "moved" / "my-model.gguf"
    renamed.parent.mkdir()
    shutil.copy(test_model, renamed)
    namesake = gguf_model.write_model(tmp_path / "namesake" / test_model.name, gguf_model.ModelSpec(seed=7))

    async def with_app(body):  # type: ignore[no-untyped-def]
        app = build_app_services(build_services())
        try:
            await app.prepare()
            return await body(app)
        finally:
            await app.aclose()

    async def choose(app: AppServices) -> tuple[str, str]:
        cpu, _ = await app.engines.add_local(test_engines.cpu_dir)
        vulkan, _ = await app.engines.add_local(test_engines.vulkan_dir)
        assert app.resolver.resolve(test_model).chosen.id == vulkan.id  # type: ignore[union-attr]
        app.dashboard.pin_engine(test_model, cpu.id)  # "Use this engine for this model"
        return cpu.id, vulkan.id

    cpu_id, vulkan_id = asyncio.run(with_app(choose))

    async def check(app: AppServices) -> None:
        for path in (test_model, renamed):
            res = app.resolver.resolve(path)
            assert res.chosen is not None and res.chosen.id == cpu_id, path
            # The CPU build runs on the processor: the reason says so, not "on this GPU".
            assert res.chosen.reason == "you chose it for this model on this machine; runs on the CPU"
        other = app.resolver.resolve(namesake).chosen
        assert other is not None and other.id == vulkan_id  # same file name, another model: not shared
        assert [s.id for s in app.chat.plan] == [vulkan_id, cpu_id]  # the chat follows it when the model changes
        app.chat.set_model(renamed, remember=False)
        assert [s.id for s in app.chat.plan] == [cpu_id, vulkan_id]

    asyncio.run(with_app(check))
    # On another GPU the choice made for the 7900 XTX does not apply.
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(TREES / "strix-halo"))

    async def other_gpu(app: AppServices) -> None:
        res = app.resolver.resolve(test_model)
        assert res.chosen is not None and res.chosen.id == vulkan_id and "8060S" in res.gpu  # named by its PCI revision

    asyncio.run(with_app(other_gpu))
