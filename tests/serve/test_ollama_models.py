"""Ollama's model routes on the library (/api/pull, /api/show, /api/copy, /api/delete, /api/version),
through the composed core, the real `ollama` client, the loopback hub and the real CPU engine."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest

from strata_gui.core.app_services import AppServices
from strata_gui.core.pool import PoolEvent
from tests.serve.test_model_server import serving
from tests.support.engines import TestEngines
from tests.support.hub_server import HubRepo, running_hub

REPO = "strata/pull-test-GGUF"
HUB_NAME = f"hf.co/{REPO}:F16"


@pytest.fixture
def hub(test_model: Path) -> Any:
    repos = [HubRepo(REPO, {"README.md": b"# Pull test\n", "pull-test-F16.gguf": test_model}, params=4_170_048)]
    with running_hub(repos) as running:
        yield running


@pytest.fixture
def folder(tmp_path: Path, test_model: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy2(test_model, models / "alpha-F16.gguf")
    return models


async def _pull_lines(o: ollama.AsyncClient, name: str) -> list[ollama.ProgressResponse]:
    return [p async for p in await o.pull(name, stream=True)]


@pytest.mark.engine
def test_pull_show_copy_delete_with_the_ollama_client(folder: Path, hub: Any, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        async with ollama.AsyncClient(host=root) as o:
            lines = await _pull_lines(o, HUB_NAME)
            assert lines[0].status == "pulling manifest" and lines[-1].status == "success"
            sizes = [(p.completed, p.total) for p in lines if p.digest]
            assert sizes and all(p.digest == lines[1].digest for p in lines if p.digest)
            assert lines[1].digest is not None and lines[1].digest.startswith("sha256:")
            assert sizes[-1][0] == sizes[-1][1] == (folder / "alpha-F16.gguf").stat().st_size
            names = {m.model for m in (await o.list()).models}
            assert names == {"alpha-F16", REPO}
            # The name it was pulled as works everywhere: show, chat.
            shown = await o.show(HUB_NAME)
            assert shown.modelinfo is not None and shown.modelinfo["general.architecture"] == "llama"
            assert shown.modelinfo["llama.context_length"] == 4096 and shown.modelinfo["tokenizer.ggml.tokens"] is None
            assert shown.template is not None and "<|im_start|>" in shown.template
            assert shown.details is not None and shown.details.family == "llama" and shown.parameters == "num_ctx 4096"
            reply = await o.generate(model=HUB_NAME, prompt="hi", options={"num_predict": 2})
            assert reply.done
            # A copy is a second name for the same file.
            assert (await o.copy(REPO, "my-llama")).status == "success"
            assert {m.model for m in (await o.list()).models} == {"alpha-F16", REPO, "my-llama"}
            assert (await o.show("my-llama:latest")).modelinfo == shown.modelinfo
            assert (app.base.paths.config_dir / "model_aliases.json").is_file()
            with pytest.raises(ollama.ResponseError) as taken:
                await o.copy("my-llama", "alpha-F16")
            assert taken.value.status_code == 400 and "already the name" in taken.value.error
            # Deleting the copy keeps the model; deleting the model removes its file.
            await o.delete("my-llama")
            assert {m.model for m in (await o.list()).models} == {"alpha-F16", REPO}
            [pulled] = [e for e in await app.models.scan_library() if e.repo_id == REPO]
            await o.delete(HUB_NAME)
            assert {m.model for m in (await o.list()).models} == {"alpha-F16"}
            assert not pulled.path.exists() and app.pool.engines() == []
            with pytest.raises(ollama.ResponseError) as gone:
                await o.delete(HUB_NAME)
            assert gone.value.status_code == 404
        async with httpx.AsyncClient(trust_env=False) as http:
            version = (await http.get(root + "/api/version")).json()
            assert isinstance(version["version"], str) and version["version"]

    serving(folder, test_engines, body, hub_endpoint=hub.url)


@pytest.mark.engine
def test_pull_errors_and_the_setting_that_turns_the_routes_off(folder: Path, hub: Any,
                                                              test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        async with ollama.AsyncClient(host=root) as o:
            with pytest.raises(ollama.ResponseError, match=r"hf\.co/org/repo") as not_hub:
                await o.pull("llama3.2", stream=False)  # Ollama's own library: not reachable from here
            assert not_hub.value.status_code == 400
            with pytest.raises(ollama.ResponseError, match="no quant 'Q2_K'"):
                await o.pull(f"hf.co/{REPO}:Q2_K")  # streamed: the error is the last line
            app.settings.update(serve_model_routes=False)
            for call in (o.pull(HUB_NAME, stream=False), o.delete("alpha-F16"), o.copy("alpha-F16", "b")):
                with pytest.raises(ollama.ResponseError, match="turned off") as off:
                    await call
                assert off.value.status_code == 403
            assert {m.model for m in (await o.list()).models} == {"alpha-F16"}
            app.settings.update(serve_model_routes=True)
            assert (await o.pull(HUB_NAME, stream=False)).status == "success"
            assert REPO in {m.model for m in (await o.list()).models}
        assert app.pool.engines() == []

    serving(folder, test_engines, body, hub_endpoint=hub.url)


@pytest.mark.engine
def test_api_delete_removes_copied_names_and_hub_files_only(folder: Path, hub: Any, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        async with ollama.AsyncClient(host=root) as o:
            assert (await o.pull(HUB_NAME, stream=False)).status == "success"
            [pulled] = [e for e in await app.models.scan_library() if e.repo_id == REPO]
            # A copied name, deleted as Ollama's clients write names (":latest", a hub name): the
            # name goes, the multi-GB file it stands for stays.
            await o.copy(REPO, "bar")
            await o.copy(REPO, "acme/x")
            await o.delete("bar:latest")
            await o.delete("hf.co/acme/x")
            assert {m.model for m in (await o.list()).models} == {"alpha-F16", REPO}
            assert pulled.path.exists()
            # A file in the user's own folder is not the API's to delete: refused, kept.
            with pytest.raises(ollama.ResponseError, match="Models page") as refused:
                await o.delete("alpha-F16:latest")
            assert refused.value.status_code == 403
            assert (folder / "alpha-F16.gguf").is_file()
            assert "alpha-F16" in {m.model for m in (await o.list()).models}

    serving(folder, test_engines, body, hub_endpoint=hub.url)


def test_copied_names_are_read_from_the_file_once_and_again_on_prune(tmp_path: Path, test_model: Path) -> None:
    from strata_gui.core.models.aliases import ModelAliases

    aliases = ModelAliases(tmp_path / "model_aliases.json")
    aliases.add("bar", test_model)
    (tmp_path / "model_aliases.json").write_text("{}", encoding="utf-8")  # written behind its back
    assert aliases.names() == {"bar": test_model}  # the event loop's lookups: memory only
    assert aliases.prune() == {} and aliases.names() == {}  # the router's listing reads the file


def test_hub_names_as_ollama_users_write_them() -> None:
    from strata_gui.core.serve.catalog import hub_name

    assert hub_name("hf.co/acme/Model-GGUF:Q4_K_M") == ("acme/Model-GGUF", "Q4_K_M")
    assert hub_name("https://huggingface.co/acme/Model-GGUF") == ("acme/Model-GGUF", "")
    assert hub_name("acme/Model-GGUF:latest") == ("acme/Model-GGUF", "")
    for not_hub in ("llama3.2", "llama3.2:1b", "hf.co/../etc:x", "hf.co/a/b/c", ""):
        assert hub_name(not_hub) is None, not_hub
