"""Install, verify, resume, probe and choose engines through the fake GitHub and the real builds."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import datetime
from pathlib import Path

import pytest

from strata_gui.core.base.errors import (
    ChecksumMismatchError,
    EngineDownloadError,
    EngineInstallError,
    InsufficientSpaceError,
    RateLimitedError,
)
from strata_gui.core.base.progress import Progress
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.config.settings import Settings
from strata_gui.core.engines import EngineService, GpuTarget
from strata_gui.core.engines.records import MANIFEST_NAME
from strata_gui.core.engines.resolver import EngineResolver
from strata_gui.core.gpu.service import build_gpu_service
from tests.engines.conftest import LEMONADE, UPSTREAM, Archives, Harness
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer

GPU_TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"
GFX1100 = GpuTarget("AMD Radeon RX 7900 XTX", 0x744C, "gfx1100")


def _leftovers(h: Harness) -> list[str]:
    found = []
    for d in (h.root / "engines", h.root / "downloads"):
        if d.exists():
            found += [p.name for p in d.iterdir()]
    return found


async def _cand(svc: EngineService, backend: str, gpus: list[GpuTarget] | None = None):  # type: ignore[no-untyped-def]
    plan = await svc.plan(gpus if gpus is not None else [GFX1100])
    return next(c for c in plan.included if c.backend == backend)


@pytest.mark.engine
@pytest.mark.vulkan
def test_gfx1100_here_rocm_unusable_then_vulkan_chosen(harness: Harness, tmp_path: Path) -> None:
    outcome = harness.run(lambda svc: svc.setup([GFX1100]))
    # tried in the plan's order; the plan returned reads as after the set-up: ROCm listed as tried
    # here, no longer first (issue 48 item 9: the guide showed "1. ROCm (recommended)" after this)
    assert [c.backend for c in outcome.plan.included] == ["vulkan", "cpu"]
    [tried] = [c for c in outcome.plan.candidates if c.backend == "rocm" and c.asset is not None]
    assert not tried.included and tried.reason.startswith("Tried on this machine: sees no ROCm device")
    rocm, vulkan = outcome.attempts
    assert rocm.engine is not None and rocm.engine.id == "lemonade-rocm-gfx110X-b1011"
    assert rocm.probe is not None and rocm.probe.verdict == "no_device"
    assert "sees no ROCm device" in rocm.probe.message
    assert vulkan.probe is not None and vulkan.probe.verdict == "works"
    assert "llvmpipe" in vulkan.probe.message
    assert outcome.chosen is not None and outcome.chosen.id == "upstream-vulkan-all-b7601"
    assert "unusable here" in outcome.notices[0]
    # the tarball's shared-library symlink chains survived extraction
    lib = outcome.chosen.library_dir / "libggml-base.so"
    assert lib.is_symlink() and os.readlink(lib) == "libggml-base.so.0"
    assert (outcome.chosen.library_dir / "libggml-base.so.0").is_symlink()
    manifest = json.loads((outcome.chosen.folder / MANIFEST_NAME).read_text())
    assert manifest["backend"] == "vulkan" and manifest["tag"] == "b7601" and manifest["verified"] is True
    assert manifest["asset"] == "llama-b7601-bin-ubuntu-vulkan-x64.tar.gz" and len(manifest["sha256"]) == 64
    rocm_manifest = json.loads((rocm.engine.folder / MANIFEST_NAME).read_text())
    assert rocm_manifest["gfx_targets"] == ["gfx1100", "gfx1101", "gfx1102", "gfx1103"]
    assert rocm_manifest["family"] == "gfx110X"

    # Later runs, through the resolver on the captured 7900 XTX machine: the first engine whose probe
    # sees a device runs; a pin on the ROCm build that failed its probe is not obeyed, and says so.
    async def resolve(svc: EngineService):  # type: ignore[no-untyped-def]
        gpus = build_gpu_service(kernels_dir(), sysfs_root=GPU_TREES / "rx7900xtx")
        store = MetricsStore(tmp_path / "metrics.sqlite3")
        try:
            resolver = EngineResolver(svc, gpus, svc.settings, store)
            await resolver.prepare()
            default = resolver.resolve(None)
            svc.pin("lemonade-rocm-gfx110X-b1011")
            pinned_failed = resolver.resolve(None)
            return default, pinned_failed
        finally:
            store.close()

    default, pinned_failed = harness.run(resolve)
    assert default.chosen is not None and default.chosen.id == "upstream-vulkan-all-b7601"
    assert default.gpu.startswith("AMD Radeon RX 7900 XTX")
    [rocm_verdict] = [v for v in default.verdicts if v.engine_id == "lemonade-rocm-gfx110X-b1011"]
    assert not rocm_verdict.included and "sees no ROCm device" in rocm_verdict.reason
    assert pinned_failed.chosen is not None and pinned_failed.chosen.id == "upstream-vulkan-all-b7601"
    assert any("pinned engine" in n and "not used" in n for n in pinned_failed.notes)


@pytest.mark.engine
def test_install_reports_progress_and_writes_manifest(harness: Harness, archives: Archives) -> None:
    seen: list[Progress] = []

    async def body(svc: EngineService):  # type: ignore[no-untyped-def]
        cand = await _cand(svc, "cpu")
        engine = await svc.install(cand, seen.append)
        return engine, await svc.probe(engine), svc.installed()

    engine, probe, installed = harness.run(body)
    assert probe.verdict == "works" and probe.version and "0.6.0-dev" in probe.version
    assert [e.id for e in installed] == ["upstream-cpu-all-b7601"]
    assert engine.server_path == engine.folder / "build" / "bin" / "llama-server"
    size = archives.cpu_zip.stat().st_size
    byte_snaps = [p for p in seen if p.unit == "bytes"]
    assert byte_snaps[-1].done == size and byte_snaps[-1].total == size
    assert [p.done for p in byte_snaps] == sorted(p.done for p in byte_snaps)
    assert any("Unpacking" in p.message for p in seen)
    assert _leftovers(harness) == ["upstream-cpu-all-b7601"]


def test_sha_mismatch_deletes_and_says_so(github: GitHubServer, archives: Archives, tmp_path: Path) -> None:
    github.add_release(UPSTREAM, "b7601", [archives.cpu_zip], wrong_digest_for=archives.cpu_zip.name)
    h = Harness(github.api_base, tmp_path / "s", dict(os.environ), Settings())

    async def body(svc: EngineService) -> None:
        await svc.install(await _cand(svc, "cpu"))

    with pytest.raises(ChecksumMismatchError, match="does not match its published checksum; the file was deleted"):
        h.run(body)
    assert _leftovers(h) == []


def test_cut_download_resumes_with_only_the_remaining_bytes(harness: Harness, published: GitHubServer,
                                                            archives: Archives) -> None:
    size = archives.vulkan_tgz.stat().st_size
    published.state.cut_after = size // 3

    async def body(svc: EngineService):  # type: ignore[no-untyped-def]
        return await svc.install(await _cand(svc, "vulkan"))

    with pytest.raises(EngineDownloadError, match="interrupted") as info:
        harness.run(body)
    assert "resumes" in (info.value.hint or "")
    part = harness.root / "downloads" / (archives.vulkan_tgz.name + ".part")
    have = part.stat().st_size
    assert 0 < have <= size // 3
    sent_before = published.state.body_bytes_sent

    # A CDN hiccup on the next try: the part is kept.
    published.state.fail_next_download = 500
    with pytest.raises(EngineDownloadError, match="answered 500"):
        harness.run(body)
    assert part.stat().st_size == have

    # "App restart": a new service instance finds the part and asks only for the rest.
    engine = harness.run(body)
    assert published.state.body_bytes_sent - sent_before == size - have
    assert published.state.ranges_seen[-1] == f"bytes={have}-"
    assert engine.verified and not part.exists()


def test_free_space_shortfall_is_checked_first(harness: Harness, published: GitHubServer) -> None:
    harness.disk_free = lambda _p: 50 << 20

    async def body(svc: EngineService) -> None:
        await svc.install(await _cand(svc, "vulkan"))

    with pytest.raises(InsufficientSpaceError, match="Not enough disk space") as info:
        harness.run(body)
    assert "Free some space" in (info.value.hint or "")
    assert "plus 64.0 MiB that Strata keeps free" in info.value.message
    assert published.state.downloads == 0
    assert _leftovers(harness) == []


def test_missing_required_file_leaves_nothing(harness: Harness, published: GitHubServer, archives: Archives) -> None:
    published.add_release(LEMONADE, "b1012", [archives.rocm_no_hip_zip])

    async def body(svc: EngineService) -> None:
        await svc.install(await _cand(svc, "rocm"))

    with pytest.raises(EngineInstallError, match=r"missing \*ggml-hip\*"):
        harness.run(body)
    assert _leftovers(harness) == []


@pytest.mark.engine
def test_binary_with_missing_library_reports_loader_message(harness: Harness, published: GitHubServer,
                                                            archives: Archives) -> None:
    published.add_release(UPSTREAM, "b7700", [archives.vulkan_missing_lib_tgz])

    async def body(svc: EngineService):  # type: ignore[no-untyped-def]
        engine = await svc.install(await _cand(svc, "vulkan"))
        return await svc.probe(engine, GFX1100)

    result = harness.run(body)
    assert result.verdict == "failed"
    assert "won't start" in result.message
    assert "libllama-server-impl.so" in result.message
    assert "error while loading shared libraries" in result.message


def test_etag_offline_and_unreachable_use_the_cached_listing(harness: Harness, published: GitHubServer) -> None:
    async def listing(svc: EngineService):  # type: ignore[no-untyped-def]
        return await svc.releases.list_releases(UPSTREAM)

    first = harness.run(listing)
    assert not first.cached and first.releases[0].tag == "b7601"
    again = harness.run(listing)
    assert published.state.not_modified == 1 and again.releases == first.releases and not again.cached

    harness.offline = True
    offline = harness.run(listing)
    assert offline.cached and offline.notice and "offline mode is on" in offline.notice
    assert offline.releases == first.releases

    harness.offline = False
    harness.api_base = "http://127.0.0.1:9"  # nothing listens there
    unreachable = harness.run(listing)
    assert unreachable.cached and "could not reach 127.0.0.1" in (unreachable.notice or "")
    plan = harness.run(lambda svc: svc.plan([GFX1100]))
    assert any("showing the listing saved" in n for n in plan.notes)

    fresh = Harness(harness.api_base, harness.root.parent / "fresh", harness.environ, harness.settings)
    with pytest.raises(EngineDownloadError, match="Could not list the releases") as info:
        fresh.run(listing)
    assert "cached" in (info.value.hint or "")


def test_rate_limit_says_when_to_try_again(harness: Harness, published: GitHubServer) -> None:
    reset = int(time.time()) + 1800
    published.state.rate_limit_reset = reset

    async def body(svc: EngineService) -> None:
        await svc.releases.list_releases(UPSTREAM)

    with pytest.raises(RateLimitedError) as info:
        harness.run(body)
    assert f"try again after {datetime.fromtimestamp(reset).strftime('%H:%M')}" in info.value.message


@pytest.mark.engine
def test_manage_update_pin_gc_remove_and_add_local(harness: Harness, published: GitHubServer, archives: Archives,
                                                   test_engines: TestEngines, tmp_path: Path) -> None:
    saved: list[frozenset[str]] = []
    newer = tmp_path / "llama-b7700-bin-ubuntu-x64.zip"
    shutil.copyfile(archives.cpu_zip, newer)

    async def body(svc: EngineService):  # type: ignore[no-untyped-def]
        old = await svc.install(await _cand(svc, "cpu"))
        published.add_release(UPSTREAM, "b7700", [newer])
        updates = svc.updates(await svc.plan([GFX1100]))
        assert [(e.id, c.tag) for e, c in updates] == [(old.id, "b7700")]
        await svc.install(updates[0][1])
        assert old.server_path.exists()  # the update went to its own folder
        svc.pin(old.id)
        assert svc.garbage_collect() == []  # the older one is pinned
        svc.pin(None)
        removed = svc.garbage_collect()
        local, probe = await svc.add_local(test_engines.cpu_dir, "cpu", name="my build")
        ids = [e.id for e in svc.installed()]
        for e in svc.installed():
            svc.remove(e.id)
        return old, removed, local, probe, ids, svc.installed()

    harness.settings_service.events.subscribe(lambda change: saved.append(change.keys) if change.persisted else None)
    old, removed, local, probe, ids, after = harness.run(body)
    assert removed == [old.id]
    assert probe.verdict == "works" and probe.message == "runs on the processor"
    assert local.id == "local-cpu-my-build" and local.server_path == test_engines.cpu_server
    assert set(ids) == {"upstream-cpu-all-b7700", "local-cpu-my-build"}
    assert after == []
    assert saved == [{"pinned_engine"}, {"pinned_engine"}]  # pinning and unpinning were saved
    assert harness.settings_service.store.load()[0].pinned_engine == ""
    assert test_engines.cpu_server.exists()  # removing a local build never deletes the user's folder
    assert _leftovers(harness) == []


def test_tuning_table_fetched_with_rocm_engine_and_checked_at_launch(harness: Harness, published: GitHubServer,
                                                                     tmp_path: Path) -> None:
    from strata_gui.core.config.resources import kernels_dir
    from strata_gui.core.engines import launch_environment, parse_catalog
    from tests.engines.test_archive_tuning_launch import _table

    table = _table(tmp_path)
    [served] = published.add_release("strata-data/tuning", "t1", [table])
    raw = json.loads((kernels_dir() / "catalog.json").read_text())
    raw["sources"][0]["hipblaslt_revisions"] = {"b1011": "d5f81531"}
    raw["tuning_tables"] = [{"gfx": "gfx1100", "hipblaslt_revision": "d5f81531", "sha256": served.sha256,
                             "url": f"{published.base}/strata-data/tuning/releases/download/t1/table.csv"}]

    async def body(svc: EngineService):  # type: ignore[no-untyped-def]
        return await svc.install(await _cand(svc, "rocm"), gpu=GFX1100)

    engine = harness.run(body, catalog=parse_catalog(raw))
    assert engine.hipblaslt_revision == "d5f81531" and engine.tuning is not None
    env, notices = launch_environment(engine, GFX1100, Settings(), {}, os_name="linux")
    assert env["HIPBLASLT_TUNING_OVERRIDE_FILE"] == str(engine.folder / "tuning" / "hipblaslt-gfx1100-d5f81531.csv")
    assert notices == []
    env, notices = launch_environment(engine, GpuTarget("7800 XT", 0x747E, "gfx1101"), Settings(), {},
                                      os_name="linux")
    assert "HIPBLASLT_TUNING_OVERRIDE_FILE" not in env
    assert "table is for gfx1100, this GPU is gfx1101" in notices[0]


@pytest.mark.engine
def test_cancel_while_unpacking_leaves_no_half_written_folder(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancel pressed while the archive unpacks: the unpacking thread cannot be stopped, so the
    clean-up waits for it; before, it removed the folder first and the thread wrote it again."""
    import asyncio
    import threading

    from strata_gui.core.engines import archive

    real = archive.safe_extract
    entered, gate, finished = threading.Event(), threading.Event(), threading.Event()

    def slow_extract(src: Path, dest: Path) -> None:  # the real unpacking, held at its start
        entered.set()
        gate.wait(30)
        try:
            real(src, dest)
        finally:
            finished.set()

    monkeypatch.setattr(archive, "safe_extract", slow_extract)

    async def body(svc: EngineService) -> None:
        task = asyncio.ensure_future(svc.install(await _cand(svc, "cpu")))
        while not entered.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        asyncio.get_running_loop().call_later(0.05, gate.set)  # the thread goes on after the Cancel
        with pytest.raises(asyncio.CancelledError):
            await task

    harness.run(body)
    assert finished.wait(30)
    time.sleep(0.05)  # anything the thread wrote after the install returned
    assert _leftovers(harness) == []
