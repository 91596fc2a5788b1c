"""The app in Chinese: language choice, the composed window, Qt's own buttons, the Settings choice."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from PySide6.QtCore import QLocale
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QLabel, QPushButton
from pytestqt.qtbot import QtBot

from strata_gui.app import UiHooks, compose
from strata_gui.core.app_services import build_app_services
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.config.services import build_services
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.dialogs import ErrorDialog
from strata_gui.ui.i18n import install_language, resolve_language, translators_of
from strata_gui.ui.pages.about_page import AboutPage
from strata_gui.ui.pages.engines_page import EnginesPage
from strata_gui.ui.pages.settings_page import SettingsPage

CHINESE_TITLES = ["聊天", "图像", "模型", "引擎", "GPU", "仪表盘", "设置", "关于"]
ENGLISH_TITLES = ["Chat", "Images", "Models", "Engines", "Dashboard", "Settings", "About"]


@pytest.mark.parametrize(("setting", "system", "expected"), [
    ("system", "zh_CN", "zh_CN"),
    ("system", "zh_TW", "zh_CN"),  # Simplified reads better than English for Traditional readers
    ("system", "en_US", "en"),
    ("system", "de_DE", "en"),
    ("en", "zh_CN", "en"),  # the Settings override wins over the system locale
    ("zh_CN", "en_US", "zh_CN"),
])
def test_language_follows_the_system_unless_overridden(setting: str, system: str, expected: str) -> None:
    assert resolve_language(setting, QLocale(system)) == expected


@pytest.fixture
def composed(qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop):
    """The real window (every service and page), torn down like tests/foundation does."""
    made = []

    def make():
        app_services = build_app_services(build_services())
        bridge = AsyncBridge()
        ui = compose(app_services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                           choose_model=lambda: None, save_path=lambda _n: None))
        window = ui.window
        made.append((app_services, bridge, window))
        return app_services.base, window

    yield make
    for app_services, bridge, window in made:
        window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(app_services.aclose())
        window.deleteLater()


def _page(window, cls):
    return next(p for p in window.pages if isinstance(p, cls))


def test_main_window_in_chinese(qtbot: QtBot, qapp: QApplication, chinese: str, composed) -> None:
    assert chinese == "zh_CN"
    _, window = composed()
    titles = window.page_titles()
    assert [t for t in titles if t in CHINESE_TITLES] == CHINESE_TITLES
    assert not set(titles) & set(ENGLISH_TITLES)
    settings = _page(window, SettingsPage)
    assert settings.save_button.text() == "保存"
    assert settings.language.itemText(0) == "跟随系统"
    assert settings.flash_attention.currentText() == "自动"
    about = _page(window, AboutPage)
    assert "关于 Strata" in {label.text() for label in about.findChildren(QLabel)}
    engines = _page(window, EnginesPage)
    buttons = {b.text() for b in engines.findChildren(QPushButton)}
    assert {"自动设置", "刷新计划"} <= buttons, buttons


def test_qt_standard_buttons_and_error_titles_are_chinese(qtbot: QtBot, chinese: str, tmp_path) -> None:
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
    qtbot.addWidget(box)
    assert box.button(QDialogButtonBox.StandardButton.Cancel).text() == "取消"  # from Qt's qtbase_zh_CN
    from strata_gui.core.base.errors import NetworkError

    dialog = ErrorDialog(NetworkError("Could not reach the hub"), log_file=tmp_path / "strata.log",
                         open_path=lambda _p: None)
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "网络问题"


def test_english_is_back_after_removing_the_translators(qtbot: QtBot, qapp: QApplication) -> None:
    assert install_language(qapp, "zh_CN") == "zh_CN"
    translators_of(qapp).remove(qapp)
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    qtbot.addWidget(box)
    assert box.button(QDialogButtonBox.StandardButton.Cancel).text() == "Cancel"
    assert install_language(qapp, "en") == "en"
    assert len(translators_of(qapp).installed) == 1  # English's own plurals only


def test_language_choice_is_saved_and_applied_at_once(qtbot: QtBot, qapp: QApplication, composed) -> None:
    services, window = composed()
    page = _page(window, SettingsPage)
    assert page.language.currentData() == "system"
    assert [page.language.itemText(i) for i in (1, 2)] == ["English", "简体中文"]  # each named in itself
    page.language.setCurrentIndex(page.language.findData("zh_CN"))
    try:
        assert page.save()
        assert json.loads(services.paths.settings_file.read_text())["language"] == "zh_CN"
        assert services.settings.language == "zh_CN"
        # no restart asked for: the window reads in the new language already (tests/i18n/test_live_language.py)
        assert translators_of(qapp).language == "zh_CN" and page.status.text() == "已保存。"
        assert [page.language.itemText(i) for i in (1, 2)] == ["English", "简体中文"]
        page.language.setCurrentIndex(page.language.findData("en"))
        page.load()  # Revert shows the saved choice again
        assert page.language.currentData() == "zh_CN"
    finally:
        install_language(qapp, "en")


def test_a_missing_catalogue_leaves_the_ui_in_english(qtbot: QtBot, qapp: QApplication, tmp_path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("STRATA_RESOURCE_ROOT", str(tmp_path))  # a bundle without resources/translations
    assert install_language(qapp, "zh_CN") == "en"
    assert translators_of(qapp).installed == []
    assert "no UI translation" in caplog.text
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    qtbot.addWidget(box)
    assert box.button(QDialogButtonBox.StandardButton.Cancel).text() == "Cancel"


def test_a_replys_statistics_from_the_core_read_in_chinese(qtbot: QtBot, chinese: str) -> None:
    from strata_gui.core.chat.records import STOPPED, Message
    from strata_gui.core.runtime.client import ReplyStats
    from strata_gui.ui.chat.message_widget import MessageWidget

    stats = ReplyStats(ttft_s=0.042, prefill_tps=3000.0, decode_tps=76.5, predicted_n=128, thinking_n=40,
                       thinking_s=1.5, finish_reason="stopped", engine="CPU b7601")
    widget = MessageWidget(Message(1, 1, "assistant", "…", STOPPED, 0.0, stats=stats))
    qtbot.addWidget(widget)
    footer = widget.stats.text().replace("\u2060", "").replace("\u00a0", " ")  # as read (units kept whole)
    assert footer.startswith("已停止")  # the UI's own status sentence
    for part in ("首 token 42 ms", "思考 40 个 token，用时 1.5 s", "预填充 3,000 tok/s", "解码 76.5 tok/s", "128 个 token"):
        assert part in footer, footer
    assert "tokens" not in footer and "prefill" not in footer  # nothing left in English but units and names
    # the CLI's English is unchanged
    assert stats.summary().startswith("TTFT 42 ms · thought 40 tokens in 1.5 s · prefill 3,000 tok/s")


def test_a_local_build_named_in_a_replys_statistics_reads_in_chinese_after_saving(qtbot: QtBot, chinese: str) -> None:
    """The engine's name at the end of a reply's line ("CPU (your build: bin)") was English in the
    Chinese UI; it is saved as a text and read back translated."""
    from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
    from strata_gui.core.chat.records import COMPLETE, Message
    from strata_gui.core.runtime.client import ReplyStats
    from strata_gui.ui.chat.message_widget import MessageWidget

    label = T(QT_TRANSLATE_NOOP("Core", "{backend} (your build: {folder})"), backend="CPU", folder="bin")
    saved = ReplyStats.from_json(ReplyStats(decode_tps=50.0, predicted_n=8, engine=label, backend="cpu").to_json())
    assert saved.summary().endswith("CPU (your build: bin)")  # the CLI's English
    widget = MessageWidget(Message(1, 1, "assistant", "…", COMPLETE, 0.0, stats=saved))
    qtbot.addWidget(widget)
    assert "自行构建" in widget.stats.text() and "your build" not in widget.stats.text()


@pytest.mark.engine
def test_an_engine_that_cannot_load_the_model_is_explained_in_chinese(
        qtbot: QtBot, chinese: str, composed, test_engines, broken_models, tmp_path,
        qasync_loop: asyncio.AbstractEventLoop) -> None:
    """The real engine refuses a damaged model: the banner and the error dialog say so in Chinese
    (the core's sentence and hint, translated at the edge); the CLI's English is unchanged."""
    import httpx

    from strata_gui.core.runtime.engine_http import EngineHttp
    from strata_gui.core.runtime.kinds import llama_command
    from strata_gui.core.runtime.launch import ServerSettings, free_loopback_port
    from strata_gui.core.runtime.outcome import ProcessEnded
    from strata_gui.core.runtime.process import ManagedProcess, http_ready
    from tests.runtime.conftest import cpu_spec

    async def fail() -> ProcessEnded:
        async with httpx.AsyncClient(trust_env=False) as http:
            port = free_loopback_port()
            proc = ManagedProcess(llama_command(cpu_spec(test_engines), broken_models["bad_magic"],
                                                ServerSettings(ctx_size=512), port),
                                  subject="CPU engine", cwd=test_engines.cpu_dir, ready_timeout=60,
                                  ready=http_ready(EngineHttp(http, f"http://127.0.0.1:{port}"), "/health"))
            with pytest.raises(ProcessEnded) as info:
                await proc.start()
            return info.value

    error = qasync_loop.run_until_complete(fail())
    assert error.message == ("CPU engine could not load the model file: it is damaged or not a supported GGUF "
                             "model.")
    assert error.hint == "Check the model file, or download it again."
    _, window = composed()
    window.show_error(error)
    assert window.banner.text.text() == ("CPU engine 无法加载模型文件：文件已损坏，或不是受支持的 GGUF 模型。"
                                    " — 请检查模型文件，或重新下载。")
    dialog = ErrorDialog(error, log_file=tmp_path / "strata.log", open_path=lambda _p: None)
    qtbot.addWidget(dialog)
    assert dialog.message.text().startswith("CPU engine 无法加载模型文件")
    assert dialog.hint.text() == "请检查模型文件，或重新下载。"


def test_a_fallback_notice_reads_in_chinese(chinese: str) -> None:
    """The chat's notice when an engine fails and the next one takes over: the core's sentence
    (kept whole in English for the CLI), translated with its parts."""
    from pathlib import Path

    from strata_gui.core.pool import FailedOver
    from strata_gui.core.runtime.engine import EngineSpec
    from strata_gui.core.runtime.outcome import Outcome, OutcomeKind, Phase, describe_outcome
    from strata_gui.ui.i18n import core_text

    rocm = EngineSpec("rocm-b1136", "ROCm", "rocm", Path("/engines/rocm/llama-server"))
    cpu = EngineSpec("cpu-b7601", "CPU", "cpu", Path("/engines/cpu/llama-server"))
    crashed = Outcome(OutcomeKind.CRASHED, Phase.RUNNING, -11, subject="ROCm engine")
    event = FailedOver("chat", Path("m.gguf"), rocm, cpu, describe_outcome(crashed, activity="answering"))
    assert event.text == ("ROCm engine crashed while answering (exit code -11, killed by SIGSEGV). "
                          "Continuing on CPU.")
    assert core_text(event.text) == "ROCm engine 在回答时崩溃（exit code -11, killed by SIGSEGV）。改用 CPU 继续。"
    missing = Outcome(OutcomeKind.MISSING_LIBRARY, Phase.STARTING, 127, subject="ROCm engine",
                      reason="libamdhip64.so.7")
    assert core_text(describe_outcome(missing)) == "ROCm engine 无法启动：找不到所需的库（缺少 libamdhip64.so.7）。"
    # The subject an engine kind gives its server is translated too.
    from strata_gui.core.runtime.kinds import IMAGE, TEXT

    oom = Outcome(OutcomeKind.OUT_OF_MEMORY, Phase.LOADING, -9, subject=TEXT.subject_for("Vulkan b7612"))
    assert describe_outcome(oom) == "Vulkan b7612 engine ran out of memory while loading the model."
    assert core_text(describe_outcome(oom)) == "Vulkan b7612 引擎 在加载模型时内存不足。"
    assert core_text(IMAGE.subject_for("CPU")) == "CPU 图像引擎"


def test_hub_failures_read_in_chinese(chinese: str) -> None:
    """What the Models page shows when the hub refuses or cannot be reached, in Chinese; the CLI's
    English is the same sentence as before."""
    import httpx

    from strata_gui.core.models.hub_errors import error_for_status, error_for_transport
    from strata_gui.ui.i18n import error_text

    limited = error_for_status(429, "bartowski/Qwen3-8B-GGUF", retry_after="30")
    assert limited.user_text() == ("The hub is rate-limiting requests. Retry after 30 s.\n"
                                   "Wait a minute and try again; signing in with a token raises the limit.")
    assert error_text(limited) == "Hugging Face 限制了请求频率。请在 30 秒后重试。\n请等一分钟再试；使用访问令牌登录可提高限额。"
    gated = error_for_status(401, "meta-llama/Llama-3.1-8B")
    assert error_text(gated).startswith("Hugging Face 需要访问令牌才能获取 meta-llama/Llama-3.1-8B。")
    offline = error_for_transport(httpx.ConnectError("refused"), "https://huggingface.co")
    assert error_text(offline) == ("无法连接到 https://huggingface.co 上的 Hugging Face。\n"
                                   "请检查网络或代理，在设置中将镜像设为 hub 端点，或开启离线模式。")


def test_settings_and_storage_failures_read_in_chinese(qapp: QApplication, tmp_path) -> None:
    """Settings that cannot be saved (a bad value, a folder that is a file) and a database that
    cannot be opened, raised by the real stores: the dialog's text in Chinese, with the parts
    (what was being done, each problem) translated too; without the catalogue the English is as before."""
    from strata_gui.core.base.errors import SettingsError, StorageError
    from strata_gui.core.chat.store import ConversationStore
    from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore
    from strata_gui.ui.i18n import error_text

    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be", encoding="utf-8")
    (tmp_path / "history.db").mkdir()  # a folder where the database file should be

    def raised(kind: type[Exception], fn) -> Exception:
        with pytest.raises(kind) as info:
            fn()
        return info.value

    service = SettingsService(SettingsStore(tmp_path / "settings.json"))
    invalid = raised(SettingsError, lambda: service.update(theme="neon", hub_endpoint="ftp://mirror"))
    unwritable = raised(SettingsError, lambda: SettingsStore(blocker / "settings.json").save(Settings()))
    reason = unwritable.__cause__.strerror  # type: ignore[union-attr]  # the system's words stay as they are
    unopenable = raised(StorageError, lambda: ConversationStore(tmp_path / "history.db").open())
    no_folder = raised(StorageError, lambda: ConversationStore(blocker / "history.db").open())

    english = [error_text(e) for e in (invalid, unwritable, unopenable, no_folder)]
    assert english == [
        "Settings not saved: Unknown theme 'neon'. hub endpoint must start with http:// or https://",
        f"Could not save settings to {blocker / 'settings.json'}: {reason}\n"
        "Check that the folder exists, is writable and the disk is not full.",
        "Could not open the conversation history: unable to open database file\n"
        "Check that the disk is not full and the data folder is writable.",
        f"Cannot create {blocker}: {reason}\nCheck that the data folder is writable.",
    ]
    assert english == [e.user_text() for e in (invalid, unwritable, unopenable, no_folder)]  # what the CLI prints

    assert install_language(qapp, "zh_CN") == "zh_CN"
    try:
        assert error_text(invalid) == "设置未保存：未知主题“neon”。 hub 端点必须以 http:// 或 https:// 开头。"
        assert error_text(unwritable) == (f"无法将设置保存到 {blocker / 'settings.json'}：{reason}\n"
                                          "请检查该文件夹是否存在、是否可写，以及磁盘是否已满。")
        assert error_text(unopenable) == ("无法打开对话历史：unable to open database file\n"
                                          "请检查磁盘是否已满，以及数据文件夹是否可写。")
        assert error_text(no_folder) == f"无法创建 {blocker}：{reason}\n请检查数据文件夹是否可写。"
    finally:
        install_language(qapp, "en")
    assert [error_text(e) for e in (invalid, unwritable, unopenable, no_folder)] == english


def test_benchmark_settings_and_engine_sentences_read_in_chinese(qapp: QApplication, tmp_path) -> None:
    """What the Dashboard's benchmark view, the start-up notices and the Engines page show, made by
    the real code: the statistics database that cannot be opened, the benchmark's verdict, a damaged
    settings file and statistics database, an engine plan from captured release listings, and a
    probe of a missing engine (also after its verdict was saved and read back). In Chinese with the
    catalogue, in English without (the CLI's words)."""
    from pathlib import Path

    from strata_gui.core.base.errors import StorageError
    from strata_gui.core.bench.choice import recommend
    from strata_gui.core.bench.store import BenchResult, MetricsStore
    from strata_gui.core.config.settings import SettingsStore
    from strata_gui.core.engines import GpuTarget, load_catalog, plan_engines
    from strata_gui.core.engines.probe import ProbeResult, probe_engine
    from strata_gui.core.engines.releases import load_releases_file
    from strata_gui.ui.i18n import core_text, error_text

    (tmp_path / "stats.db").mkdir()  # a folder where the statistics database should be
    with pytest.raises(StorageError) as info:
        MetricsStore(tmp_path / "stats.db")
    unopenable = info.value

    def run(engine: str, decode: float, prefill: float) -> BenchResult:
        return BenchResult("m.gguf", engine, "vulkan", "GPU", 512, 128, 3, [prefill] * 3, [decode] * 3)

    verdict = recommend([run("Vulkan b7601", 40.0, 900.0), run("ROCm b1011", 60.0, 1200.0),
                         BenchResult("m.gguf", "CPU b7601", "cpu", "GPU", 512, 128, 3, error="timed out")])

    settings_file = tmp_path / "settings.json"
    settings_file.write_text("{not json", encoding="utf-8")
    _settings, settings_notice = SettingsStore(settings_file).load()
    assert settings_notice is not None
    moved_settings = next(p.name for p in tmp_path.iterdir() if p.name.startswith("settings.json."))
    settings_reason = settings_notice[len("Your settings file could not be read ("):settings_notice.index("), so")]
    json_detail = settings_reason[len("it is not valid JSON ("):-1]  # json's own words stay as they are

    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not a database" * 100)
    store = MetricsStore(damaged)
    store.close()
    db_notice = store.notice
    assert db_notice is not None
    moved_db = db_notice[db_notice.index("kept as ") + len("kept as "):-1]

    data = Path(__file__).parents[1] / "data" / "engines"
    releases = dict(load_releases_file(f) for f in sorted(data.glob("releases-*.json")))
    plan = plan_engines(load_catalog(), [GpuTarget("Radeon 610M", 0x164E, "gfx1036")], "linux", releases)
    no_rocm = next(c for c in plan.candidates if not c.included)
    vulkan = next(c for c in plan.included if c.backend == "vulkan")
    build = vulkan.reason.split(": ", 1)[1]

    missing = tmp_path / "llama-server"
    probe = asyncio.run(probe_engine(missing, "vulkan", {}))
    saved = ProbeResult.from_json(json.loads(json.dumps(probe.to_json())))

    shown = [error_text(unopenable), core_text(verdict.reason), core_text(verdict.warnings[0]),
             core_text(settings_notice), core_text(db_notice), core_text(no_rocm.reason), core_text(vulkan.reason),
             core_text(probe.message), core_text(saved.message)]
    english = [
        "Could not open statistics and engine choices: unable to open database file\n"
        "Check that the disk is not full and the data folder is writable.",
        "ROCm b1011 decodes 1.50× as fast as Vulkan b7601 (60.0 vs 40.0 tokens/s).",
        "CPU b7601 could not be measured: timed out",
        f"Your settings file could not be read ({settings_reason}), so defaults are used. It was moved to "
        f"{moved_settings}.",
        f"The database file was damaged (file is not a database), so Strata started a new one for statistics "
        f"and engine choices. The old file was kept as {moved_db}.",
        "gfx1036: no ROCm build for this target → Vulkan",
        f"works on any GPU with a Vulkan driver: {build}",
        f"won't start: {missing} is missing",
        f"won't start: {missing} is missing",
    ]
    assert shown == english
    assert [unopenable.user_text(), verdict.reason, verdict.warnings[0], settings_notice, db_notice, no_rocm.reason,
            vulkan.reason, probe.message, saved.message] == english  # what the CLI prints

    assert install_language(qapp, "zh_CN") == "zh_CN"
    try:
        assert [error_text(unopenable), core_text(verdict.reason), core_text(verdict.warnings[0]),
                core_text(settings_notice), core_text(db_notice), core_text(no_rocm.reason),
                core_text(vulkan.reason), core_text(probe.message), core_text(saved.message)] == [
            "无法打开统计数据和引擎选择：unable to open database file\n请检查磁盘是否已满，以及数据文件夹是否可写。",
            "ROCm b1011 的解码速度是 Vulkan b7601 的 1.50 倍（60.0 对 40.0 token/s）。",
            "无法测量 CPU b7601：timed out",
            f"无法读取您的设置文件（不是有效的 JSON（{json_detail}）），因此使用默认设置。 该文件已移至 {moved_settings}。",
            f"数据库文件已损坏（file is not a database），因此 Strata 为统计数据和引擎选择新建了一个数据库文件。"
            f"旧文件已保留为 {moved_db}。",
            "gfx1036：没有针对此目标的 ROCm 构建 → Vulkan",
            f"适用于任何装有 Vulkan 驱动的 GPU: {build}",
            f"无法启动：{missing} 不存在",
            f"无法启动：{missing} 不存在",
        ]
    finally:
        install_language(qapp, "en")
    assert [error_text(unopenable), core_text(verdict.reason), core_text(verdict.warnings[0]),
            core_text(settings_notice), core_text(db_notice), core_text(no_rocm.reason), core_text(vulkan.reason),
            core_text(probe.message), core_text(saved.message)] == english


@pytest.mark.engine
def test_engine_updates_and_the_setup_summary_read_in_chinese(qapp: QApplication, tmp_path, test_engines) -> None:
    """What the first-run guide and the Engines page show about setting up and updating engines, made
    by the real code on real builds from the loopback GitHub: the set-up's line per build it tried, the
    steps of an update's trial (its progress), the refusal of a build that does not start (also read
    back from the saved update records after a restart), the offer held back since, and a roll back
    with nothing to go back to. In Chinese with the catalogue, in English without (the CLI's words)."""
    import os
    from pathlib import Path

    import httpx

    from strata_gui.core.base.errors import EngineError
    from strata_gui.core.base.texts import Text
    from strata_gui.core.bench.store import MetricsStore
    from strata_gui.core.bench.updates import EngineUpdater
    from strata_gui.core.config.resources import kernels_dir
    from strata_gui.core.config.settings import Settings
    from strata_gui.core.engines.resolver import EngineResolver
    from strata_gui.core.engines.updates import LEDGER_FILE, UpdateLedger
    from strata_gui.core.gpu.service import build_gpu_service
    from strata_gui.ui.i18n import core_text, error_text
    from tests.engines.conftest import Harness, pack_cpu_zip
    from tests.support.engine_updates import pack_wrapper_zip, publish
    from tests.support.github_server import github_server
    from tests.support.pool import real_pool

    real = pack_cpu_zip(test_engines.cpu_server, tmp_path / "llama-b7601-bin-ubuntu-x64.zip")
    # A release whose llama-server exits at once, saying nothing (as a build missing its runtime can).
    broken = pack_wrapper_zip(test_engines.cpu_server, tmp_path / "broken" / "llama-b7700-bin-ubuntu-x64.zip",
                              "#!/bin/sh\nexit 3\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GGML_", "HIP", "LD_LIBRARY"))}
    steps: list[str] = []

    with github_server() as github:
        publish(github, "b7601", real, tmp_path, "2026-02-10T08:10:00Z")
        h = Harness(github.api_base, tmp_path / "strata", env, Settings())

        async def main() -> tuple:
            async with httpx.AsyncClient(follow_redirects=True, timeout=30) as http:
                svc = h.service(http)
                gpus = build_gpu_service(kernels_dir(), sysfs_root=Path(__file__).parents[1] / "data" / "gpu"
                                         / "linux" / "rx7900xtx")
                store = MetricsStore(h.root / "metrics.sqlite3")
                resolver = EngineResolver(svc, gpus, svc.settings, store)
                pool = real_pool(http, env, log_dir=h.root / "logs")
                updater = EngineUpdater(svc, resolver, pool, http, store, h.settings_service)
                try:
                    await resolver.prepare()
                    setup = await svc.setup(resolver.gpu_targets())
                    publish(github, "b7700", broken, tmp_path, "2026-03-02T09:00:00Z")
                    (offer,) = await updater.check()
                    outcome = await updater.trial(offer, on_progress=lambda p: steps.append(p.message))
                    (held,) = (await updater.survey()).retries  # refused: not offered, kept for --retry
                    with pytest.raises(EngineError) as info:
                        updater.rollback()
                    return setup, outcome, held, info.value
                finally:
                    await pool.aclose()
                    store.close()

        setup, outcome, held, no_rollback = asyncio.run(main())
    saved = UpdateLedger(h.root / "engines" / LEDGER_FILE).history()[-1]  # what a restart reads back
    assert isinstance(saved.message, Text) and saved.message == outcome.message
    steps = list(dict.fromkeys(steps))  # the download reports its step many times

    def shown() -> list[str]:
        return ([core_text(n) for n in setup.notices] + [core_text(s) for s in steps]
                + [core_text(outcome.message), core_text(saved.message), core_text(held.held), error_text(no_rollback)])

    where = "AMD Radeon RX 7900 XTX"
    refusal = f"b7700 does not run on your {where}: won't start: exit code 3; kept b7601"
    english = [
        "upstream-cpu-all-b7601: usable: runs on the processor",
        "Installing b7700 beside b7601",
        "Downloading llama-b7700-bin-ubuntu-x64.zip",
        "Unpacking llama-b7700-bin-ubuntu-x64.zip",
        "Checking b7700 on this machine",
        refusal,
        refusal,
        f"it was refused before ({refusal})",
        "There is no earlier build to roll back to.\n"
        "Strata keeps the last good build of each kind after an update promotes a new one.",
    ]
    assert shown() == english
    assert [*setup.notices, *steps, outcome.message, saved.message, held.held,
            no_rollback.user_text()] == english  # what the CLI prints

    assert install_language(qapp, "zh_CN") == "zh_CN"
    try:
        refusal_zh = f"b7700 无法在你的 {where}上运行：无法启动：退出码 3；继续使用 b7601"
        assert shown() == [
            "upstream-cpu-all-b7601：可用：在处理器上运行",
            "正在安装 b7700（与 b7601 并存）",
            "正在下载 llama-b7700-bin-ubuntu-x64.zip",
            "正在解压 llama-b7700-bin-ubuntu-x64.zip",
            "正在本机检查 b7700",
            refusal_zh,
            refusal_zh,
            f"它之前已被拒绝（{refusal_zh}）",
            "没有可回滚到的早期构建。\n更新启用新构建后，Strata 会为每一类引擎保留上一个正常的构建。",
        ]
    finally:
        install_language(qapp, "en")
    assert shown() == english


def test_chat_errors_read_in_chinese(qapp: QApplication, chinese: str, test_engines, test_model,
                                     qasync_loop: asyncio.AbstractEventLoop) -> None:
    """What the chat shows when a request cannot be answered, in Chinese: the real engine refusing a
    conversation longer than its context, an attachment that is no picture, a schema that is no
    object; the CLI's English is unchanged."""
    import httpx

    from strata_gui.core.base.errors import ChatError
    from strata_gui.core.chat.images import ChatImage
    from strata_gui.core.runtime.client import ChatClient
    from strata_gui.core.runtime.engine_http import EngineHttp
    from strata_gui.core.runtime.kinds import llama_command
    from strata_gui.core.runtime.launch import ServerSettings, free_loopback_port
    from strata_gui.core.runtime.process import ManagedProcess, http_ready
    from strata_gui.core.runtime.structured import load_schema
    from strata_gui.ui.i18n import error_text
    from tests.runtime.conftest import cpu_spec

    async def too_long() -> ChatError:
        async with httpx.AsyncClient(trust_env=False) as http:
            port = free_loopback_port()
            proc = ManagedProcess(llama_command(cpu_spec(test_engines), test_model, ServerSettings(ctx_size=128), port),
                                  subject="CPU engine", cwd=test_engines.cpu_dir, ready_timeout=60,
                                  ready=http_ready(EngineHttp(http, f"http://127.0.0.1:{port}"), "/health"))
            await proc.start()
            try:
                with pytest.raises(ChatError) as info:
                    await ChatClient(http, f"http://127.0.0.1:{port}").stream(
                        [{"role": "user", "content": "word " * 600}])
                return info.value
            finally:
                await proc.stop()

    context = qasync_loop.run_until_complete(too_long())
    assert context.message.startswith("The conversation is too long for the model's context: ")
    assert context.hint == "Start a new conversation or raise the context size in Settings."
    reason = context.message.removeprefix("The conversation is too long for the model's context: ")
    assert error_text(context) == f"对话超出了模型的上下文长度：{reason}\n请开始新对话，或在设置中增大上下文大小。"

    with pytest.raises(ChatError) as picture:
        ChatImage.from_bytes(b"just text", "notes.png")
    assert picture.value.user_text() == ("notes.png is not a PNG, JPEG, GIF or BMP image.\n"
                                         "Convert it to PNG or JPEG first.")
    assert error_text(picture.value) == "notes.png不是 PNG、JPEG、GIF 或 BMP 图片。\n请先将其转换为 PNG 或 JPEG。"
    with pytest.raises(ChatError) as empty:
        ChatImage.from_bytes(b"")
    assert empty.value.message == "The image is empty." and error_text(empty.value) == "该图片是空的。"
    with pytest.raises(ChatError) as schema:
        load_schema("[1, 2]")
    assert error_text(schema.value) == 'schema 必须是 JSON 对象。\n请把 schema 写成 JSON 对象，例如 {"type": "object"}。'


def test_model_file_and_network_errors_read_in_chinese(chinese: str, tmp_path) -> None:
    """A file that is no GGUF model and a server that does not answer, as the Models page shows them."""
    import httpx

    from strata_gui.core.base.errors import StrataError, network_error
    from strata_gui.core.models.gguf_meta import read_header
    from strata_gui.ui.i18n import error_text

    fake = tmp_path / "notes.gguf"
    fake.write_bytes(b"PK\x03\x04" + bytes(64))
    with pytest.raises(StrataError) as info:
        read_header(fake)
    english = info.value.message
    assert "is not a GGUF file (it starts with b'PK\\x03\\x04', not b'GGUF')" in english
    shown = error_text(info.value)
    assert "不是 GGUF 文件（它以 b'PK\\x03\\x04' 开头，而不是 b'GGUF'）" in shown and "is not" not in shown
    slow = network_error(httpx.ReadTimeout("timed out"))
    assert slow is not None and slow.user_text() == ("A server did not answer in time.\n"
                                                     "Check your network or proxy and try again.")
    assert error_text(slow) == "服务器未能及时响应。\n请检查网络或代理，然后重试。"


def test_chinese_names_a_token_one_way() -> None:
    """Issue 48: "tokens", "个 token" and "词元" were mixed; the catalogue says "token" (outside placeholders)."""
    from tests.i18n.conftest import ZH_TS, read_ts

    mixed = [f"[{m.context}] {t}" for m in read_ts(ZH_TS) for t in m.translations
             if "词元" in t or re.search(r"\btokens\b", re.sub(r"\{[^}]*\}", "", t))]
    assert not mixed, "\n".join(mixed)


def test_where_a_model_runs_and_its_fit_read_in_chinese(chinese: str) -> None:
    """Issue 48: the fit line ("针对 system RAM — runs on the CPU"), the Fit column, the GPU page's
    reasons, the CPU warning's why and fix, engine names and the starters' blurbs came from core
    f-strings and stayed English."""
    from pathlib import Path

    from strata_gui.core.config import kernels_dir
    from strata_gui.core.engines.devices import pick_gpus
    from strata_gui.core.engines.probe import Device
    from strata_gui.core.engines.run_device import run_device
    from strata_gui.core.gpu import build_gpu_service
    from strata_gui.core.models.fit import FitEstimate, Verdict
    from strata_gui.core.models.starters import SHIPPED_DESCRIPTIONS
    from strata_gui.core.runtime.engine import Backend, EngineSpec
    from strata_gui.ui.i18n import core_text
    from tests.first_run.conftest import GPU_TREES

    vulkan = EngineSpec("vulkan-b7601", "Vulkan b7601", Backend.VULKAN, Path("/x/llama-server"))
    llvmpipe = Device("Vulkan0", "llvmpipe (LLVM 19.1.7, 256 bits)", 32000, 32000)
    # the 7900 XTX and the Raphael iGPU beside it, as their sysfs tree reads
    picks = pick_gpus(build_gpu_service(kernels_dir(), sysfs_root=GPU_TREES / "rx7900xtx").detect(), [])
    where = run_device(vulkan, [llvmpipe], picks, ["ROCm b1011"])
    assert where.on_cpu
    english = re.compile(r"\b(runs|the|on|no|engine|works|check|failed|sees|only|driver|Install|discrete)\b")
    for said in (where.describe(), where.fix, *(p.reason for p in picks), T(QT_TRANSLATE_NOOP("Core", "system RAM — {where}"),
                                                                  where=where.describe()),
                 FitEstimate(Verdict.CPU_ONLY, 0, 10, 4096, 0, 0, 0, 0, 4096).describe(), *SHIPPED_DESCRIPTIONS):
        shown = core_text(said)
        assert shown != said and not english.search(shown), shown
    assert core_text(where.describe()).startswith("在 CPU 上运行："), core_text(where.describe())
