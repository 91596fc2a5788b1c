"""Engine updates you can trust, on real builds published by the loopback GitHub.

Every build here is the real CPU llama-server. The "other" builds are the same binary behind a
small start script, as a broken release would behave: one starves the engine once a model loads
(the prompt read 4 tokens at a time: honestly slower, no sleep), one crashes (SIGSEGV) while loading any
model, one cannot load one particular model (the architecture error a real regression prints).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from strata_gui.core.base.errors import EngineError, ServerBusyError, StrataError
from strata_gui.core.base.progress import Progress
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.updates import EngineUpdater, TrialOutcome
from strata_gui.core.bench.workload import BenchConfig, Benchmark
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.config.settings import Settings
from strata_gui.core.engines import EngineService, InstalledEngine
from strata_gui.core.engines.resolver import EngineResolver
from strata_gui.core.engines.updates import (
    AUTO_ROLLED_BACK,
    LEDGER_FILE,
    PROMOTED,
    REFUSED,
    ROLLED_BACK,
    TRIAL_PASSED,
    UpdateEntry,
    UpdateLedger,
)
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.core.pool import EnginePool, EngineStateChanged
from strata_gui.core.pool.runner import run_along_plan
from strata_gui.core.runtime.client import ChatClient, RequestOptions
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from tests.engines.conftest import Harness
from tests.support.engine_updates import CURRENT, NEW, Builds, make_builds, make_models, publish
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer
from tests.support.pool import real_pool

T = TypeVar("T")
GPU_TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"
WHERE = "AMD Radeon RX 7900 XTX"

@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> Builds:
    return make_builds(tmp_path_factory.mktemp("update-builds"), test_engines)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> tuple[Path, Path]:
    return make_models(tmp_path_factory.mktemp("update-models"), test_engines)


@dataclass
class Rig:
    svc: EngineService
    resolver: EngineResolver
    pool: EnginePool
    store: MetricsStore
    updater: EngineUpdater
    http: httpx.AsyncClient


def run_rig(github: GitHubServer, tmp_path: Path, model: Path, body: Callable[[Rig], Awaitable[T]], *,
            tolerance: int = 40) -> T:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GGML_", "HIP", "LD_LIBRARY"))}
    h = Harness(github.api_base, tmp_path / "strata", env, Settings(update_tolerance_pct=tolerance,
                                                                   last_model=str(model)))

    async def main() -> T:
        async with httpx.AsyncClient(follow_redirects=True, timeout=30) as http:
            svc = h.service(http)
            gpus = build_gpu_service(kernels_dir(), sysfs_root=GPU_TREES / "rx7900xtx")
            store = MetricsStore(h.root / "metrics.sqlite3")
            resolver = EngineResolver(svc, gpus, svc.settings, store)
            pool = real_pool(http, env, log_dir=h.root / "logs")
            # One thread for every build: the machine's other work then sways both alike.
            updater = EngineUpdater(svc, resolver, pool, http, store, h.settings_service,
                                    launch_settings=lambda _m: ServerSettings(threads=1))
            unwatch = updater.watch()
            try:
                await resolver.prepare()
                plan = await svc.plan(resolver.gpu_targets())
                cand = next(c for c in plan.included if c.backend == "cpu")
                await svc.probe(await svc.install(cand), resolver.primary_target())
                return await body(Rig(svc, resolver, pool, store, updater, http))
            finally:
                unwatch()
                await pool.aclose()
                store.close()

    return asyncio.run(main())


async def update_once(rig: Rig, github: GitHubServer, tmp_path: Path, archive: Path) -> TrialOutcome:
    publish(github, "b7700", archive, tmp_path, "2026-03-02T09:00:00Z")
    offers = await rig.updater.check()
    assert [(o.current.id, o.candidate.engine_id, o.tag) for o in offers] == [(CURRENT, NEW, "b7700")]
    assert offers[0].published_at.startswith("2026-03-02")
    assert offers[0].notes_url == "https://github.com/ggml-org/llama.cpp/releases/tag/b7700"
    (outcome,) = await rig.updater.update()
    return outcome


def chosen(rig: Rig, model: Path) -> str | None:
    spec = rig.resolver.resolve(model).chosen
    return spec.id if spec else None


@pytest.mark.engine
def test_a_faster_build_is_promoted_and_the_last_good_one_kept(github: GitHubServer, builds: Builds,
                                                              models: tuple[Path, Path], tmp_path: Path) -> None:
    model = models[0]
    publish(github, "b7601", builds.slow, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> dict[str, Any]:
        assert chosen(rig, model) == CURRENT
        publish(github, "b7700", builds.real, tmp_path, "2026-03-02T09:00:00Z")
        (tried,) = await rig.updater.update(trial_only=True)  # tries, changes nothing
        assert tried.verdict == "passed" and tried.message.startswith(f"b7700 passed its trial on your {WHERE}")
        assert chosen(rig, model) == CURRENT and NEW not in {e.id for e in rig.svc.installed()}
        (outcome,) = await rig.updater.update()
        assert outcome.verdict == "promoted", outcome.message
        assert chosen(rig, model) == NEW  # the resolver now runs the promoted build
        left = {v.engine_id: v.reason for v in rig.resolver.resolve(model).left_out}
        assert left[CURRENT].startswith("kept as the last good build")
        assert rig.svc.garbage_collect() == []  # gc keeps the last good build
        passed, entry = rig.svc.ledger.history()
        assert passed.action == TRIAL_PASSED and entry.action == PROMOTED and entry.figures == outcome.figures
        assert not await rig.updater.check()  # up to date
        # Roll back by hand: the last good build runs again.
        back = rig.updater.rollback()
        assert back.action == ROLLED_BACK and chosen(rig, model) == CURRENT
        assert back.message == f"Rolled back to b7601 from b7700 on your {WHERE}"
        return outcome.figures

    figures = run_rig(github, tmp_path, model, body)
    print(f"faster build: prefill {figures['prefill_tps']:.0f} vs {figures['current_prefill_tps']:.0f} t/s, "
          f"decode {figures['decode_tps']:.0f} vs {figures['current_decode_tps']:.0f} t/s")
    assert figures["prefill_slower_pct"] < 0  # faster, as measured


@pytest.mark.engine
def test_a_build_that_crashes_while_loading_is_refused_with_the_reason(
        github: GitHubServer, builds: Builds, models: tuple[Path, Path], tmp_path: Path) -> None:
    model = models[0]
    publish(github, "b7601", builds.real, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> TrialOutcome:
        outcome = await update_once(rig, github, tmp_path, builds.crash)
        assert outcome.verdict == "refused"
        assert chosen(rig, model) == CURRENT
        assert NEW not in {e.id for e in rig.svc.installed()}  # the refused build is not kept
        (entry,) = rig.svc.ledger.history()
        assert entry.action == REFUSED and entry.message == outcome.message
        # The next update does not try the same build again, and says why.
        survey = await rig.updater.survey()
        assert survey.offers == [] and [o.tag for o in survey.retries] == ["b7700"]
        refused, in_use = (c.line() for c in survey.candidates)
        assert refused.startswith("b7700 (2026-03-02): skipped: refused at ") and "because b7700 failed" in refused
        assert in_use == "b7601 (2026-02-10): skipped: the build in use"
        assert await rig.updater.update() == []
        return outcome

    outcome = run_rig(github, tmp_path, model, body)
    assert outcome.message.startswith(f"b7700 failed with strata-trial-model.gguf on your {WHERE}: ")
    assert "crashed while loading" in outcome.message and outcome.message.endswith("; kept b7601")


@pytest.mark.engine
def test_a_refused_release_is_skipped_and_the_best_other_one_is_offered(
        github: GitHubServer, builds: Builds, models: tuple[Path, Path], tmp_path: Path) -> None:
    model = models[0]
    publish(github, "b7601", builds.real, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> None:
        # An old build moved to a higher tag (its title still says b7651), the good b7700, and b7800,
        # which an earlier trial refused. By tag number b9001, then b7800, would be the newest.
        publish(github, "b9001", builds.real, tmp_path, "2026-02-20T09:00:00Z", name="b7651")
        publish(github, "b7700", builds.real, tmp_path, "2026-03-02T09:00:00Z")
        publish(github, "b7800", builds.crash, tmp_path, "2026-03-05T09:00:00Z")
        refused = "upstream-cpu-all-b7800"
        rig.svc.ledger.record(UpdateEntry(datetime(2026, 3, 6, 10, 15).timestamp(), REFUSED, "text:upstream:cpu:",
                                          refused, CURRENT, "b7800 failed with strata-trial-model.gguf; kept b7601"),
                              refuse=True)
        assert [(o.tag, o.held) for o in await rig.updater.check()] == [("b7700", "")]
        survey = await rig.updater.survey()
        assert [c.line() for c in survey.candidates] == [
            "b7800 (2026-03-05): skipped: refused at 2026-03-06 10:15 because b7800 failed with "
            "strata-trial-model.gguf; kept b7601",
            "b7700 (2026-03-02): offered"]
        assert [o.tag for o in survey.retries] == ["b7800"]
        # --retry tries the refused build again first; refused again, it does not block the offer.
        outcomes = await rig.updater.update(retry_refused=True)
        assert [(o.offer.tag, o.verdict) for o in outcomes] == [("b7800", "refused"), ("b7700", "promoted")], \
            [o.message for o in outcomes]
        assert chosen(rig, model) == NEW
        # Nothing newer that is not refused: up to date, and the check says why for each release.
        survey = await rig.updater.survey()
        assert survey.offers == [] and await rig.updater.update(survey=survey) == []
        assert [c.line().split(": skipped: ")[1][:11] for c in survey.candidates] == ["refused at ", "the build i"]

    run_rig(github, tmp_path, model, body, tolerance=60)


@pytest.mark.engine
def test_a_build_that_breaks_tool_calls_is_refused(github: GitHubServer, builds: Builds,
                                                  models: tuple[Path, Path], tmp_path: Path) -> None:
    model = models[0]
    publish(github, "b7601", builds.real, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> TrialOutcome:
        outcome = await update_once(rig, github, tmp_path, builds.breaks_tools)
        assert chosen(rig, model) == CURRENT
        return outcome

    outcome = run_rig(github, tmp_path, model, body, tolerance=60)
    assert outcome.verdict == "refused"
    assert outcome.message.startswith("b7700 broke strata-trial-model.gguf's replies: ")
    assert "Unable to generate parser for this template" in outcome.message, outcome.message
    assert outcome.message.endswith("… Error: Jinja Exception: tool calls are broken in this build; kept b7601")
    assert "\n" not in outcome.message
    assert outcome.figures["prefill_tps"] > 0  # it loaded and was measured: only its replies failed


@pytest.mark.engine
def test_a_slower_build_is_refused_and_the_current_one_stays(github: GitHubServer, builds: Builds,
                                                            models: tuple[Path, Path], tmp_path: Path) -> None:
    model = models[0]
    publish(github, "b7601", builds.real, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> TrialOutcome:
        outcome = await update_once(rig, github, tmp_path, builds.slow)
        assert outcome.verdict == "refused", outcome.message
        assert chosen(rig, model) == CURRENT
        return outcome

    outcome = run_rig(github, tmp_path, model, body)
    f = outcome.figures
    print(f"slow build: prefill {f['prefill_slower_pct']:.0f} % slower, decode {f['decode_slower_pct']:.0f} % "
          f"slower; {outcome.message}")
    assert max(f["prefill_slower_pct"], f["decode_slower_pct"]) > 40
    assert outcome.message.startswith("b7700 prefilled ") or outcome.message.startswith("b7700 decoded ")
    assert f"slower than b7601 on your {WHERE} with strata-trial-model.gguf (" in outcome.message
    assert outcome.message.endswith("the tolerance is 40 %); kept b7601")


@pytest.mark.engine
def test_a_build_that_breaks_after_promotion_is_rolled_back_automatically(
        github: GitHubServer, builds: Builds, models: tuple[Path, Path], tmp_path: Path) -> None:
    model, other = models
    publish(github, "b7601", builds.real, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> None:
        # The current build has loaded the other model (its benchmark result says so).
        bench = Benchmark(rig.http, rig.pool, rig.store, launch_settings=lambda _m: ServerSettings(threads=1))
        (before,) = await bench.run(other, [rig.resolver.spec_for(rig.svc.get(CURRENT), "test")],
                                    gpu=rig.resolver.gpu_key(), config=BenchConfig(64, 8, 1),
                                    model_key=rig.resolver.model_key(other) or "")
        assert before.ok, before.error
        outcome = await update_once(rig, github, tmp_path, builds.breaks_other)
        assert outcome.verdict == "promoted", outcome.message
        assert chosen(rig, other) == NEW

        async def reply(lease: Any) -> str:
            return str(lease.base_url)

        with pytest.raises(StrataError):
            await run_along_plan(rig.pool, rig.resolver.plan_for(other), other, lambda _s: ServerSettings(),
                                 reply, user="chat")
        last = rig.svc.ledger.history()[-1]
        assert last.action == AUTO_ROLLED_BACK
        assert last.message == (f"b7700 could not load strata-other-model.gguf, which b7601 loaded; rolled back to "
                                f"b7601 and marked b7700 bad for this model on your {WHERE}")
        assert chosen(rig, other) == CURRENT and chosen(rig, model) == CURRENT
        assert rig.svc.ledger.is_bad(NEW, rig.resolver.model_key(other), rig.resolver.gpu_key())
        # The next message runs on the restored build.
        ran = await run_along_plan(rig.pool, rig.resolver.plan_for(other), other, lambda _s: ServerSettings(),
                                   reply, user="chat")
        assert ran.engine.id == CURRENT

    run_rig(github, tmp_path, model, body, tolerance=60)


@pytest.mark.engine
def test_a_trial_waits_for_the_streaming_reply_and_the_chat_waits_for_the_trial(
        github: GitHubServer, builds: Builds, models: tuple[Path, Path], tmp_path: Path) -> None:
    model, chats_model = models  # the chat uses another model: nothing but the turn keeps the trial out
    publish(github, "b7601", builds.real, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> None:
        order: list[str] = []
        told: list[str] = []

        def on_pool(event: object) -> None:
            if isinstance(event, EngineStateChanged) and event.state is ServerState.STARTING:
                order.append(f"start {event.engine.spec.id}")

        rig.pool.events.subscribe(on_pool)
        chat_spec = rig.resolver.plan_for(chats_model)[0]
        lease = await rig.pool.acquire(chat_spec, chats_model, ServerSettings(threads=1), user="chat")
        client = ChatClient(rig.http, lease.base_url, lease.api_key or None)
        publish(github, "b7700", builds.real, tmp_path, "2026-03-02T09:00:00Z")
        later: list[asyncio.Task[Any]] = []

        async def next_message() -> None:
            # A chat message sent during the trial: it waits, and is told why.
            with pytest.raises(ServerBusyError) as busy:
                await rig.pool.acquire(chat_spec, chats_model, ServerSettings(threads=1), user="api", wait=False)
            told.append(busy.value.message)
            again = await rig.pool.acquire(chat_spec, chats_model, ServerSettings(threads=1), user="chat",
                                           on_progress=lambda p: told.append(p.message))
            order.append("next message")
            again.release()

        def progress(p: Progress) -> None:
            if p.message.startswith("Loading") and not later:
                later.append(asyncio.get_running_loop().create_task(next_message()))

        update = asyncio.create_task(rig.updater.update(on_progress=progress))
        reply = await client.stream([{"role": "user", "content": "Tell me a long story."}],
                                    options=RequestOptions(max_tokens=200))
        order.append("reply streamed")
        lease.release()
        (outcome,) = await update
        order.append("trial done")
        await later[0]
        assert reply.text and outcome.verdict == "promoted", outcome.message
        assert order.index("reply streamed") < order.index(f"start {NEW}")  # not while the reply streamed
        # The next message got its engine only once the trial's last engine had started and served.
        assert max(i for i, o in enumerate(order) if o == f"start {NEW}") < order.index("next message")
        assert order.count(f"start {NEW}") == 2  # its benchmark, its format check
        assert told[0].startswith("Strata is trying the engine update b7700")  # the API is told (busy)
        assert told[1] == told[0]  # the chat waits, and is told the same

    run_rig(github, tmp_path, model, body, tolerance=60)


@pytest.mark.engine
def test_a_pinned_build_is_never_replaced_and_the_check_works_offline(
        github: GitHubServer, builds: Builds, models: tuple[Path, Path], tmp_path: Path) -> None:
    publish(github, "b7601", builds.real, tmp_path, "2026-02-10T08:10:00Z")

    async def body(rig: Rig) -> None:
        publish(github, "b7700", builds.crash, tmp_path, "2026-03-02T09:00:00Z")
        (online,) = await rig.updater.check()
        assert not online.cached and not online.held
        rig.svc.releases.offline = True  # the saved listing answers
        (offline,) = await rig.updater.check()
        assert offline.cached and offline.tag == "b7700" and "(from the saved release list)" in offline.message()
        rig.svc.pin(CURRENT)
        (pinned,) = await rig.updater.check()
        assert pinned.held == f"{CURRENT} is pinned; a pinned build is never replaced"
        assert await rig.updater.update() == [] and await rig.updater.update(retry_refused=True) == []
        with pytest.raises(EngineError, match="pinned"):
            await rig.updater.trial(pinned)
        assert [e.id for e in rig.svc.installed()] == [CURRENT] and rig.svc.ledger.history() == []

    run_rig(github, tmp_path, models[0], body)


def test_gc_keeps_the_build_in_use_and_the_last_good_one_and_a_damaged_ledger_is_ignored(
        github: GitHubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(github.api_base, tmp_path / "strata", {}, Settings())

    async def body(svc: EngineService) -> None:
        for i, tag in enumerate(("b7500", "b7601", "b7700", "b7800")):
            folder = svc.engines_dir / f"upstream-cpu-all-{tag}"
            folder.mkdir(parents=True)
            InstalledEngine(f"upstream-cpu-all-{tag}", "cpu", folder, folder / "llama-server", tag,
                            source="upstream", installed_at=float(i)).write_manifest()
        # b7800 was refused (left on disk), b7700 promoted over b7601.
        svc.ledger.record(UpdateEntry(1.0, REFUSED, "text:upstream:cpu:", "upstream-cpu-all-b7800",
                                      "upstream-cpu-all-b7700", "b7800 failed"), refuse=True)
        svc.ledger.record(UpdateEntry(2.0, PROMOTED, "text:upstream:cpu:", "upstream-cpu-all-b7700",
                                      "upstream-cpu-all-b7601", "b7700 replaced b7601"),
                          promote=("upstream-cpu-all-b7700", "upstream-cpu-all-b7601"))
        assert sorted(svc.garbage_collect()) == ["upstream-cpu-all-b7500", "upstream-cpu-all-b7800"]
        assert svc.ledger.refused("upstream-cpu-all-b7800") == "b7800 failed"  # not tried again, even gone
        assert [h.action for h in svc.ledger.history()] == [REFUSED, PROMOTED]
        svc.ledger.path.write_text("{not json")
        assert svc.ledger.history() == [] and svc.ledger.active("text:upstream:cpu:") is None
        assert "Could not use the engine update ledger" in caplog.text  # kept aside and named
        assert list(svc.ledger.path.parent.glob("strata-updates.json.corrupt-*"))
        assert svc.garbage_collect() == ["upstream-cpu-all-b7601"]  # no record: the newest stays

    h.run(body)


def test_a_trial_whose_process_is_unknown_or_gone_is_settled_on_the_next_read(tmp_path: Path) -> None:
    """A record written before trials named their process (or by a process that is gone) is not
    left "on trial"; a trial this process runs is."""
    path = tmp_path / LEDGER_FILE
    path.write_text(json.dumps({"version": 1, "on_trial": ["upstream-cpu-all-b7700"], "history": []}))
    ledger = UpdateLedger(path, clock=lambda: 5.0)
    assert ledger.on_trial() == []
    (entry,) = ledger.unfinished()
    assert (entry.at, entry.action, entry.engine) == (5.0, "not finished", "upstream-cpu-all-b7700")
    assert entry.message == ("The trial of upstream-cpu-all-b7700 did not finish: the Strata process that ran it "
                             "ended during it; the build in use stays")
    assert json.loads(path.read_text())["on_trial"] == []  # saved: settled once
    ledger.begin_trial(NEW, group="text:upstream:cpu:", tag="b7700", previous=CURRENT, previous_tag="b7601")
    assert ledger.on_trial() == [NEW] and ledger.unfinished() == []  # tried again: no longer unfinished
