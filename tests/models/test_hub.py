"""Hub search and detail against the loopback hub (httpx over real HTTP; huggingface_hub as the reference)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from strata_gui.core.base.errors import HubError
from strata_gui.core.models.fit import Verdict


def test_search_filters_sorts_and_pages(hub: Any, make_service: Any) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            first = await svc.search("", "downloads")
            assert [r.repo_id for r in first.items[:3]] == [
                "strata/test-llama-GGUF", "strata/test-llama-split-GGUF", "fillers/model-44-GGUF"]
            assert len(first.items) == 30 and first.next_url
            second = await svc.search(next_url=first.next_url)
            assert len(second.items) == 18 and second.next_url is None
            all_ids = [r.repo_id for r in first.items + second.items]
            assert len(set(all_ids)) == 48
            hit = first.items[0]
            assert hit.downloads == 5000 and hit.likes == 40 and hit.params == 4_170_048
            assert hit.last_modified is not None and hit.last_modified.year == 2026
            found = await svc.search("split", "likes")
            assert [r.repo_id for r in found.items] == ["strata/test-llama-split-GGUF"]
            by_likes = await svc.search("fillers", "likes")
            assert by_likes.items[0].likes == 6

    asyncio.run(go())
    search_calls = [p for m, p, h in hub.state.requests if p.startswith("/api/models?")]
    assert "filter=gguf" in search_calls[0] and "sort=downloads" in search_calls[0]


def test_detail_groups_quants_and_split_sets(hub: Any, make_service: Any, test_model: Any, split_model: Any) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            detail = await svc.detail("strata/test-llama-GGUF")
            assert [q.label for q in detail.quants] == ["F16", "Q4_K_M", "Q8_0"]  # equal sizes: stable order
            assert all(q.size == test_model.stat().st_size for q in detail.quants)
            assert all(q.first.sha256 and len(q.first.sha256) == 64 for q in detail.quants)
            assert "# Strata Test Llama GGUF" in detail.card and "license:" not in detail.card
            assert detail.commit == "0123456789abcdef0123456789abcdef01234567"
            split = await svc.detail("strata/test-llama-split-GGUF")
            assert len(split.quants) == 1
            entry = split.quants[0]
            assert entry.is_split and entry.label == "F16" and entry.name == "strata-test-llama-F16 (3 parts)"
            assert entry.size == sum(p.stat().st_size for p in split_model)

            report = await svc.fit_report(detail)
            assert report.architecture == "llama" and report.trained_context == 4096
            assert all(f.estimate is not None and f.estimate.verdict is Verdict.FULL_GPU for f in report.fits)
            assert report.default is not None and report.default.entry.label == "Q4_K_M"
            split_report = await svc.fit_report(split)
            assert split_report.fits[0].estimate is not None

    asyncio.run(go())
    # One ranged header read per repo serves every quant; the second report used it again.
    gguf_gets = [h.get("Range") for m, p, h in hub.state.requests if m == "GET" and "test-llama-GGUF/resolve" in p and p.endswith(".gguf")]
    assert gguf_gets and all(r and r.startswith("bytes=") for r in gguf_gets)


@pytest.mark.parametrize(
    ("status", "message"),
    [(429, "rate-limiting"), (500, "server error"), (503, "server error")],
)
def test_search_errors_are_explained(hub: Any, make_service: Any, status: int, message: str) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            hub.state.fail_next.append(("/api/models", status))
            with pytest.raises(HubError, match=message) as info:
                await svc.search("x")
            assert info.value.hint

    asyncio.run(go())


def test_detail_errors_are_explained(hub: Any, make_service: Any) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            with pytest.raises(HubError, match="not found"):
                await svc.detail("nobody/nothing-GGUF")
            hub.state.fail_next.append(("/api/models/strata", 429))
            with pytest.raises(HubError, match="rate-limiting"):
                await svc.detail("strata/test-llama-GGUF")

    asyncio.run(go())


def test_unreachable_hub_and_offline_mode(make_service: Any) -> None:
    async def go() -> None:
        async with make_service(None) as svc:
            with pytest.raises(HubError, match="Could not reach the hub") as info:
                await svc.search("llama")
            assert "offline mode" in (info.value.hint or "")
            svc.offline = True
            with pytest.raises(HubError, match="offline mode"):
                await svc.search("llama")

    asyncio.run(go())


def test_the_model_api_answer_reads_as_huggingface_hub_reads_it(hub: Any) -> None:
    """Strata reads the detail answer itself (the app does not ship huggingface_hub): the same
    files, sizes, hashes and flags as huggingface_hub's ``ModelInfo`` of the same JSON, and a
    clear refusal of one that is not a model's details."""
    import httpx
    from huggingface_hub.hf_api import ModelInfo

    from strata_gui.core.models.hub import repo_info_from_json

    for repo in ("strata/test-llama-GGUF", "strata/test-llama-split-GGUF", "strata/gated-llama-GGUF"):
        data = httpx.get(f"{hub.url}/api/models/{repo}/revision/main", params={"blobs": "true"},
                         headers={"Authorization": f"Bearer {hub.state.token}"}).json()
        ours, theirs = repo_info_from_json(data), ModelInfo(**data)
        assert ours.files and [(f.path, f.size, f.sha256) for f in ours.files] == [
            (s.rfilename, s.size or (s.lfs.size if s.lfs else 0), s.lfs.sha256 if s.lfs else None)
            for s in theirs.siblings or []]
        assert (ours.sha, ours.pipeline_tag, list(ours.tags), ours.gated, ours.downloads, ours.likes) == \
            (theirs.sha, theirs.pipeline_tag, theirs.tags, bool(theirs.gated), theirs.downloads, theirs.likes)
    assert repo_info_from_json(data).gated  # "manual"
    for bad in ([], {"siblings": {"a": 1}}, {"siblings": [{"size": 3}]}, {"siblings": [{"rfilename": "a", "size": "9"}]},
                {"siblings": [{"rfilename": "a", "lfs": "x"}]}, {"sha": 7}):
        with pytest.raises(TypeError):
            repo_info_from_json(bad)
