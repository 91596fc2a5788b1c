"""Model facts kept across runs: the next start reads no header it read before, a changed file
is read again, and a damaged, outdated or unwritable cache only means reading the header."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from strata_gui.core.base.errors import GGUFError
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.models import LoadOptionsService
from strata_gui.core.models.facts import ModelFacts, file_key
from strata_gui.core.models.fit import MemoryTarget
from tests.support import gguf_model
from tests.support.settings import settings_service

THINKING_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['reasoning_content'] %}{{ '<think>' + message['reasoning_content'] + '</think>' }}{% endif %}"
    "{{ message['content'] + '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' }}{% endif %}"
)


def _service(facts: ModelFacts) -> LoadOptionsService:
    """A fresh service, as the next start of Strata builds it."""
    paths = AppPaths.from_environment()
    return LoadOptionsService(paths.data_dir / "load_options.json", settings_service(context_size=2048),
                              lambda: MemoryTarget("GPU", 8 << 30), 64 << 30, facts=facts)


@pytest.fixture
def thinking_model(tmp_path: Path) -> Path:
    spec = gguf_model.ModelSpec(layers=3, chat_template=THINKING_TEMPLATE)
    return gguf_model.write_model(tmp_path / "thinker-F16.gguf", spec)


def _damage_in_place(model: Path) -> None:
    """Break the header's magic, keeping the size and the modification time: only a read of the
    header notices."""
    st = model.stat()
    with open(model, "r+b") as fh:
        fh.write(b"XXXX")
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_the_next_start_reads_no_header_and_a_changed_file_is_read_again(thinking_model: Path,
                                                                          tmp_path: Path) -> None:
    facts_file = tmp_path / "cache" / "model-facts.json"
    first = _service(ModelFacts(facts_file))
    shape, template, key = (first.shape_now(thinking_model), first.template_now(thinking_model),
                            first.key(thinking_model))
    assert shape.n_layers == 3
    assert template is not None and template.opens_thinking
    assert json.loads(facts_file.read_text())["models"][file_key(thinking_model)]["shape"]["n_layers"] == 3

    _damage_in_place(thinking_model)
    again = _service(ModelFacts(facts_file))  # the next run: its facts come from the file
    assert again.shape_now(thinking_model) == shape
    assert again.template_now(thinking_model) == template
    assert again.key(thinking_model) == key

    os.utime(thinking_model)  # now the file changed: its header is read, and found damaged
    changed = _service(ModelFacts(facts_file))
    with pytest.raises(GGUFError, match="not a GGUF file"):
        changed.shape_now(thinking_model)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        changed.template_now(thinking_model)
    assert changed.key(thinking_model) != key  # the identity hashes the file's bytes again


def test_a_model_without_a_template_is_remembered_as_having_none(tmp_path: Path) -> None:
    model = gguf_model.write_model(tmp_path / "plain-F16.gguf", gguf_model.ModelSpec(chat_template=""))
    facts_file = tmp_path / "facts.json"
    assert _service(ModelFacts(facts_file)).template_now(model) is None
    _damage_in_place(model)
    assert _service(ModelFacts(facts_file)).template_now(model) is None


def test_a_damaged_or_outdated_cache_means_reading_the_header(thinking_model: Path, tmp_path: Path) -> None:
    facts_file = tmp_path / "facts.json"
    facts_file.write_bytes(b"\x00{not json")
    svc = _service(ModelFacts(facts_file))
    assert svc.shape_now(thinking_model).n_layers == 3
    stored = json.loads(facts_file.read_text())  # written again, whole
    entry = stored["models"][file_key(thinking_model)]
    del entry["shape"]["n_layers"]  # as another version of Strata might have stored it
    entry["template"] = {"thinking": "yes"}
    facts_file.write_text(json.dumps(stored))
    svc = _service(ModelFacts(facts_file))
    assert svc.shape_now(thinking_model).n_layers == 3
    template = svc.template_now(thinking_model)
    assert template is not None and template.opens_thinking

    facts_file.write_text(json.dumps({"version": 999, "models": {file_key(thinking_model): {"identity": "x"}}}))
    assert _service(ModelFacts(facts_file)).key(thinking_model).startswith("file:")


def test_an_unwritable_cache_folder_still_answers(thinking_model: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    facts = ModelFacts(blocker / "facts.json")
    svc = _service(facts)
    assert svc.shape_now(thinking_model).n_layers == 3
    assert svc.template_now(thinking_model) is not None
    assert list(tmp_path.glob("**/*.tmp")) == []


def test_the_file_keeps_the_most_recent_models(tmp_path: Path) -> None:
    facts_file = tmp_path / "facts.json"
    facts = ModelFacts(facts_file, limit=2)
    models = [gguf_model.write_model(tmp_path / f"m{i}-F16.gguf", gguf_model.ModelSpec(layers=i + 1))
              for i in range(3)]
    for m in models:
        facts.get(m, "size", lambda p: p.stat().st_size)
    kept = json.loads(facts_file.read_text())["models"]
    assert sorted(kept) == sorted(file_key(m) for m in models[1:])
