"""The local API's activity (the Network page's list, captured bodies) and /metrics, through the
composed core and the real CPU engine; /metrics read with Prometheus' own text-format parser."""

from __future__ import annotations

import base64
import os
import shutil
import stat
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from strata_gui.core.app_services import AppServices
from strata_gui.core.pool import PoolEvent
from strata_gui.core.serve.activity import CAPTURE_LIMIT, redact_body
from tests.serve.test_model_server import serving
from tests.support.engines import TestEngines


@pytest.fixture
def folder(tmp_path: Path, test_model: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy2(test_model, models / "alpha-F16.gguf")
    return models


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.mark.engine
def test_metrics_and_activity_follow_real_requests(folder: Path, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        async with openai.AsyncOpenAI(base_url=root + "/v1", api_key="none", max_retries=0) as client:
            stream = await client.chat.completions.create(
                model="alpha-F16", max_tokens=4, stream=True, messages=[{"role": "user", "content": "hi"}])
            assert [c async for c in stream]
            with pytest.raises(openai.NotFoundError):
                await client.chat.completions.create(model="nothing", max_tokens=2,
                                                     messages=[{"role": "user", "content": "hi"}])
        async with httpx.AsyncClient(trust_env=False) as http:
            scrape = await http.get(root + "/metrics")
        assert scrape.status_code == 200 and scrape.headers["Content-Type"].startswith("text/plain")
        samples = _samples(scrape.text)
        ok = (("api", "openai"), ("model", "alpha-F16"))
        assert samples[("strata_requests_total", (*ok, ("status", "200")))] == 1
        unknown = (("api", "openai"), ("model", "unknown"), ("status", "404"))
        assert samples[("strata_requests_total", unknown)] == 1
        assert samples[("strata_time_to_first_token_seconds_count", ok)] == 1
        assert samples[("strata_output_tokens_sum", ok)] == 4
        assert samples[("strata_output_tokens_bucket", (("api", "openai"), ("le", "+Inf"), ("model", "alpha-F16")))] == 1
        assert samples[("strata_queue_depth", ())] == 0 and samples[("strata_requests_in_flight", ())] == 0
        assert samples[("strata_loaded_models", ())] == 1
        [memory] = [v for (name, labels), v in samples.items()
                    if name == "strata_model_memory_bytes" and ("model", "alpha-F16") in labels]
        assert memory > 0
        first, second = list(app.serve.activity.entries)
        assert (first.client, first.api, first.model, first.status, first.output_tokens) == \
            ("127.0.0.1", "openai", "alpha-F16", 200, 4)
        assert first.ttft_s is not None and first.wait_s is not None and first.decode_tps
        assert first.request_body is None  # capture is off by default
        assert (second.model, second.status, second.wait_s) == ("unknown", 404, None)
        # Made-up names, a new one per request and long: one "unknown" series, nothing of the names kept.
        async with httpx.AsyncClient(trust_env=False) as http:
            for i in range(5):
                refused = await http.post(root + "/v1/chat/completions", json={
                    "model": f"{i}-" + "z" * 300_000, "messages": [{"role": "user", "content": "hi"}]})
                assert refused.status_code == 404
            scrape = await http.get(root + "/metrics")
        assert "zzzz" not in scrape.text and len(scrape.text) < 20_000
        assert _samples(scrape.text)[("strata_requests_total", unknown)] == 6
        assert [e.model for e in app.serve.activity.entries][2:] == ["unknown"] * 5

    serving(folder, test_engines, body)


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(3000)).decode()


@pytest.mark.engine
def test_captured_bodies_are_redacted_and_capped(folder: Path, test_engines: TestEngines) -> None:
    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
            r = await http.post(root + "/api/chat", headers={"Authorization": "Bearer sk-secret-1"}, json={
                "model": "alpha-F16", "stream": False, "options": {"num_predict": 2},
                "api_key": "sk-secret-2", "messages": [{"role": "user", "content": "describe", "images": [PNG]}]})
        # The test model has no projector: the engine refuses the image (its status is passed on).
        [entry] = app.serve.activity.entries
        assert entry.status == r.status_code
        captured = entry.request_body or ""
        assert "sk-secret" not in captured and captured.count("<redacted>") == 2
        assert "<image 3 KB>" in captured and PNG[:40] not in captured and '"describe"' in captured

    serving(folder, test_engines, body, serve_capture_bodies=True)


@pytest.mark.engine
def test_captured_bodies_hide_every_kind_of_key_and_the_log_is_private(folder: Path, tmp_path: Path,
                                                                       test_engines: TestEngines) -> None:
    log = tmp_path / "requests.jsonl"

    async def body(app: AppServices, root: str, _events: list[PoolEvent]) -> None:
        server_key = app.serve.generate_key()  # the server's own key, pasted into a prompt
        app.serve.activity.log_to(log)
        async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
            await http.post(root + "/api/chat", headers={"x-goog-api-key": "sk-hdr-1", "api-key": "sk-hdr-2"}, json={
                "model": "absent", "key": "sk-body-1", "auth": "sk-body-2", "credentials": "sk-body-3",
                "token": {"value": "sk-nested-1"}, "messages": [{"role": "user", "content": f"my key: {server_key}"}]})
            await http.post(root + "/v1/chat/completions", content=b"model=absent&api_key=sk-form-1&x=1",
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
        captured = "\n".join(e.request_body or "" for e in app.serve.activity.entries)
        assert len(app.serve.activity.entries) == 2 and "my key: " in captured and "model=absent" in captured
        assert "sk-" not in captured and server_key not in captured
        app.serve.activity.close_log()
        written = log.read_text(encoding="utf-8")
        assert written.count("\n") == 2 and "sk-" not in written and server_key not in written

    serving(folder, test_engines, body, serve_capture_bodies=True)
    if os.name == "posix":
        assert stat.S_IMODE(log.stat().st_mode) == 0o600  # prompts: not for the computer's other users


def test_a_huge_body_is_cut_before_it_is_parsed() -> None:
    # 32 MB of small JSON objects: parsing and indenting it whole took seconds on the server's loop.
    huge = b'{"api_key": "sk-huge-1", "messages": [' + b'{"role": "user", "content": "x"},' * 1_000_000 + b"{}]}"
    png = b'{"images": ["' + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(3_000_000)) + b'"], "key": "sk-2"}'
    text, image = redact_body(huge), redact_body(png)
    assert "sk-" not in text and len(text) < CAPTURE_LIMIT + 100 and text.endswith("more characters not kept)")
    assert "<image 2930 KB>" in image and "sk-" not in image and len(image) < 200
    # A key whose value the cut goes through.
    straddling = b'{"a": "' + b"x " * (CAPTURE_LIMIT // 2 - 10) + b'", "api_key": "sk-' + b"k" * 2_000_000 + b'"}'
    assert "sk-" not in redact_body(straddling)


def test_redaction_of_multipart_fields() -> None:
    multipart = (b'--b\r\nContent-Disposition: form-data; name="api_key"\r\n\r\nsk-mp-1\r\n--b\r\n'
                 b'Content-Disposition: form-data; name="model"\r\n\r\nwhisper\r\n--b--')
    text = redact_body(multipart)
    assert "sk-mp-1" not in text and "whisper" in text


def test_redaction_of_data_urls_and_the_size_cap() -> None:
    url = "data:image/jpeg;base64," + base64.b64encode(bytes(200_000)).decode()
    text = redact_body(b'{"messages": [{"content": [{"type": "image_url", "image_url": {"url": "' + url.encode()
                       + b'"}}], "password": "p"}], "filler": "' + b"x" * 100_000 + b'"}')
    assert "<image 195 KB>" in text and '"password": "<redacted>"' in text
    assert len(text) < CAPTURE_LIMIT + 100 and text.endswith("more characters not kept)")


def test_the_text_format_escapes_labels_and_parses_with_prometheus_own_parser() -> None:
    from strata_gui.core.serve.activity import ActivityEntry
    from strata_gui.core.serve.metrics import ServerMetrics

    odd = 'my "model"\\with\nlines'
    metrics = ServerMetrics(lambda: [], lambda: 2, lambda: 1)
    for ttft in (0.07, 0.3, 700.0):
        metrics.observe(ActivityEntry(0.0, "::1", "POST", "/api/chat", "ollama", odd, 200, 1.5, ttft_s=ttft))
    samples = _samples(metrics.exposition().decode())
    labels = (("api", "ollama"), ("model", odd))
    assert samples[("strata_requests_total", (*labels, ("status", "200")))] == 3
    buckets = {le: samples[("strata_time_to_first_token_seconds_bucket", (("api", "ollama"), ("le", le), ("model", odd)))]
               for le in ("0.05", "0.1", "0.5", "300", "+Inf")}
    assert buckets == {"0.05": 0, "0.1": 1, "0.5": 2, "300": 2, "+Inf": 3}
    assert samples[("strata_time_to_first_token_seconds_sum", labels)] == pytest.approx(700.37)
    assert samples[("strata_requests_in_flight", ())] == 2 and samples[("strata_queue_depth", ())] == 1
