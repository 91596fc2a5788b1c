"""Chat page: conversations on the left; the model, engine state and messages on the right.

Streaming stays smooth at hundreds of tokens per second: the chat service batches the streamed
text (about one event per frame), each batch is appended to its message widget's text, and the
messages that grew are re-rendered at once (only the Markdown segments that changed) unless the
last render was less than a frame ago, or rendering and painting would take more than about 6 % of
the CPU; then a timer renders the text gathered meanwhile. The first text of a reply is therefore
painted as soon as it arrives, and so is its last (the core marks it complete). A send fills in
bubbles prepared while idle, once the core announces that the request is on its way. Long
conversations open on their last page of messages; earlier pages load on demand.
"""

from __future__ import annotations

import asyncio
import html
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QMimeData, Qt, QTimer
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import ChatFormatError, ProgressCallback, StrataError, shown
from strata_gui.core.chat import (
    COMPLETE,
    DEFAULT_TITLE,
    MARK_END,
    MARK_START,
    MODEL_MISSING,
    MODEL_SWITCHED,
    STREAMING,
    ChatEvent,
    ChatImage,
    ChatService,
    EngineStatus,
    EngineSwitchOffer,
    ImportResult,
    Message,
    MessageAdded,
    MessageDelta,
    MessageUpdated,
    Notice,
    PlanChanged,
    ReplyProgress,
    SearchHit,
    ToolApproval,
    search_conversations,
)
from strata_gui.core.engines import GpuPick, Resolution
from strata_gui.core.models import LibraryEntry, LoadOptionsService
from strata_gui.core.pool import PoolActivity, PoolEvent
from strata_gui.core.remote import RemoteService
from strata_gui.core.runtime import TEXT, EngineSpec, ServerState
from strata_gui.ui.bridge import AsyncBridge, CoroutineFactory, TaskHandle, follow
from strata_gui.ui.chat.attachments import AttachmentStrip, local_files, model_files, raw_images
from strata_gui.ui.chat.conversation_menu import ConversationMenu
from strata_gui.ui.chat.documents import DocumentsPanel, PassageDialog, is_image
from strata_gui.ui.chat.find_bar import FindBar
from strata_gui.ui.chat.input_box import ChatInput
from strata_gui.ui.chat.load_options_panel import LoadOptionsPanel
from strata_gui.ui.chat.message_widget import MessageWidget
from strata_gui.ui.chat.settings_panel import ConversationSettingsPanel
from strata_gui.ui.chat.voice import AUDIO_SUFFIXES, Transcriber, VoiceInput, audio_files
from strata_gui.ui.i18n import LiveTexts, core_text, error_line, keep_translated
from strata_gui.ui.pages.base import Page
from strata_gui.ui.widgets import ElidedLabel, NoticeBanner

if TYPE_CHECKING:
    from PySide6.QtGui import QShortcut

    from strata_gui.core.chat import PresetStore
    from strata_gui.core.documents import Citation, DocumentService
    from strata_gui.core.tools import ApprovalRequest, Decision, McpHost, McpServerStore
    from strata_gui.ui.chat.presets import PresetBar
    from strata_gui.ui.chat.tools_panel import ToolsPanel

PAGE_SIZE = 60
# Opening a conversation builds its newest messages at once (a screenful, even of short ones) and
# the rest of the page above them a few per loop turn: 60 long Markdown answers took ~600 ms to
# build and lay out before the first paint on 2 cores (bench/memory.py).
FIRST_SCREEN = 10
BACKFILL_STEP = 2
BACKFILL_DELAY_MS = 20  # the first screen is laid out and painted before the rest is built
RENDER_STYLE = """
QFrame#userMessage { background: palette(alternate-base); border-radius: 8px; }
QFrame#assistantMessage { border-radius: 8px; }
QLabel#messageRole { font-weight: bold; }
QFrame#codeBlock { background: palette(base); border: 1px solid palette(mid); border-radius: 6px; }
QFrame#toolMessage { border: 1px dashed palette(mid); border-radius: 8px; }
QFrame#toolCall { border: 1px solid palette(mid); border-radius: 6px; }
QLabel#toolCallTitle { font-weight: bold; }
QLabel#replyNotice { color: #b45309; }
QLabel#jsonCheck[ok="true"] { color: #15803d; }
QLabel#jsonCheck[ok="false"] { color: #b91c1c; }
"""
FRAME_S = 0.016  # renders of a streaming reply are at least one 60 Hz frame apart ...
RENDER_SHARE = 16  # ... and 16x the CPU time of the last frame (render + paint) apart: where the
# engine uses every core (a CPU engine on a small machine), showing the stream takes at most about
# 6 % of one; measured on 2 cores at 1,000 tokens/s, 10x left 1.4x the extra CPU per reply of 20x ...
MAX_RENDER_GAP_S = 0.1  # ... but a long reply still moves at least 10 times a second
YIELD_MS = 1  # later work in a turn of its own: a 0 ms timer chains with the turn before it (see
# the chat service's YIELD_S), so timers and input would wait for both
SPARE_DELAY_MS = 300  # spare bubbles are built this long after the page is shown or a reply ended (idle)
MODEL_BUTTON_CHARS = 32  # the model picker shows this many characters of its model's name (it fits at 820 px)
READ_AGAIN_MS = 800  # a changed system prompt is read ahead again once the typing pauses this long


class ChatPage(Page):
    """Chat with a local model.

    Args:
        chat_service: Conversations, the managed engine and fallback (core).
        bridge: Runs replies and engine starts; reports their errors.
        remote: The user's remote engines; when given, the header offers them as the engine.
        use_engine_folder: Checks an engine folder and puts it first for this session (core).
        resolve: The engine resolver's answer for a model: the header announces its chosen engine
            and reason, and the engines it leaves out (the same answer the status bar gives).
        load_options: Per-model load options; when given, a "Load options" panel edits them.
        gpu_picks: Which GPUs models run on and why (the resolver); the panel's GPU row shows them.
        choose_devices: Saves the user's GPU choice (the same setting the GPU page writes).
        tools: The saved tool servers and their host (read when the "Tools" panel is first shown);
            without it, no panel.
        library: The library's chat models, for the model picker.
        presets: The saved presets; with them, the conversation settings have a preset picker.
    """

    page_title = "Chat"
    page_icon = "SP_MessageBoxQuestion"

    def __init__(self, chat_service: ChatService, bridge: AsyncBridge, parent: QWidget | None = None,
                 remote: RemoteService | None = None,
                 use_engine_folder: Callable[[Path, ProgressCallback], Awaitable[EngineSpec]] | None = None,
                 resolve: Callable[[Path | None], Resolution] | None = None,
                 load_options: LoadOptionsService | None = None,
                 gpu_picks: Callable[[], list[GpuPick]] | None = None,
                 choose_devices: Callable[[list[str]], object] | None = None,
                 tools: Callable[[], tuple[McpServerStore, McpHost]] | None = None,
                 library: Callable[[], Awaitable[list[Path]]] | None = None,
                 presets: PresetStore | None = None,
                 open_model: Callable[[Path], Awaitable[LibraryEntry]] | None = None,
                 transcribe: Transcriber | None = None,
                 documents: DocumentService | None = None,
                 embedding_models: Callable[[], Awaitable[list[Path]]] | None = None) -> None:
        super().__init__(parent)
        self._transcribe = transcribe  # speech to text (the microphone, dropped audio); None: no voice
        self._documents = documents  # attached documents: their panel, and the passages citations open
        self._embedding_models = embedding_models  # the library's embedding models (the panel's vector choice)
        self.texts = LiveTexts(self)  # follow a language switch
        self._presets = presets  # saved presets: a picker in the conversation settings
        self._tools = tools
        self._library = library  # the library's chat models, for the model picker
        self._open_model = open_model  # adds a dropped GGUF to the library (kept across restarts)
        self.drop_handle: TaskHandle | None = None
        self.setAcceptDrops(True)  # a GGUF dropped anywhere on the page becomes the chat's model
        self.library_models: list[Path] = []
        self.library_task: TaskHandle | None = None
        self.tools_panel: ToolsPanel | None = None  # built when first shown
        # Tool calls waiting for the user's answer: (message id, call id) -> (answer, question).
        self._approvals: dict[tuple[int, str], tuple[asyncio.Future[Decision], ApprovalRequest]] = {}
        self._resolve = resolve
        self._load_options = load_options
        self._gpu_picks = gpu_picks
        self._choose_devices = choose_devices
        self._use_engine_folder = use_engine_folder
        self.page_title = self.tr("Chat")
        self._service = chat_service
        self._bridge = bridge
        self._remote = remote
        self.conversation_id: int | None = None
        self.message_widgets: dict[int, MessageWidget] = {}
        self._said: dict[str, int] = {}  # a warning → the reply of this conversation that shows it
        self.reply_handle: TaskHandle | None = None
        self._reply_conversation_id: int | None = None  # where the reply being written goes
        self.engine_handle: TaskHandle | None = None
        self.editing_message_id: int | None = None
        # What the input held when a message was sent: it leaves the input when the message shows
        # in the conversation (see _on_event), and stays there if the send fails before that.
        self._sent_input: str | None = None
        self._dirty: set[int] = set()
        # One bubble per role built ahead while idle: a send only fills them (time to first token).
        self._spares: dict[str, MessageWidget] = {}
        self._notice_details = ""
        self._model_gone_in: int | None = None  # the conversation whose own model is gone (the notice offers to go on)
        self._stick_to_bottom = True
        self._loaded_all = True
        self._backfill: list[Message] = []  # the open page's older messages not built yet (oldest first)
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.timeout.connect(self._flush_renders)
        self._next_render = 0.0  # perf_counter() time before which a streaming reply is not re-rendered
        self.shortcuts: list[QShortcut] | None = None  # Ctrl+N, Esc, Ctrl+F, Ctrl+K, Ctrl+L (on_shown)
        self._context_before = 0  # the meter's figure before the reply being written (its lower bound)
        self.waiting_text = ""  # why the chat's request waits for its engine, as the pool says ("": it does not)
        self._build()
        self.setStyleSheet(RENDER_STYLE)
        follow(self, chat_service.events, self._on_event)
        follow(self, chat_service.pool.events, self._on_pool_event)
        chat_service.approver = self._approve  # the inline "Allow once / Always allow / Deny"
        if remote is not None:  # endpoints added or removed on the Network page
            follow(self, remote.events, lambda _e: self.refresh_run_on())
        self._show_model()
        self._show_engine_state(chat_service.engine_state, "")

    # -- layout ----------------------------------------------------------------------------------
    def _build(self) -> None:
        """The conversations on the left, the open conversation on the right, in a splitter."""
        sidebar = self._build_sidebar()
        head = self._build_header()
        settings_row = self._build_panels()
        self._build_message_list()
        input_row = self._build_input_row()

        main = QWidget()
        right = QVBoxLayout(main)
        right.setContentsMargins(8, 0, 0, 0)
        right.addLayout(head)
        # Under the buttons, full width: the engine announcement (engine, why, engines left out).
        right.addWidget(self.engine_state)
        right.addWidget(self.load_bar)
        right.addWidget(self.notice)
        right.addWidget(self._scrolled_panels(settings_row))
        right.addWidget(self.find_bar)
        right.addWidget(self.stack, 1)
        right.addWidget(self.edit_hint)
        right.addWidget(self.attachments)
        if self.documents_panel is not None:
            right.addWidget(self.documents_panel)
        right.addLayout(input_row)
        right.addWidget(self.context_meter)

        splitter = QSplitter()
        splitter.addWidget(sidebar)
        splitter.addWidget(main)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([220, 700])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.addWidget(splitter)
        self._update_meter()

    def _build_sidebar(self) -> QWidget:
        """Search, New chat, the conversation list, Rename and Delete."""
        self.search = QLineEdit()
        self.texts.set(self.search.setPlaceholderText, lambda: self.tr("Search conversations"))
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.refresh_conversations)
        self.new_button = QPushButton()
        self.texts.set(self.new_button.setText, lambda: self.tr("New chat"))
        self.new_button.clicked.connect(self.new_conversation)
        self.conversation_list = QListWidget()
        self._list_elides = False  # set up with the first titles (naming Qt enums before the first paint costs)
        self.conversation_list.currentItemChanged.connect(self._on_conversation_selected)
        self.rename_button = QPushButton()
        self.texts.set(self.rename_button.setText, lambda: self.tr("Rename"))
        self.rename_button.clicked.connect(self._ask_rename)
        self.delete_button = QPushButton()
        self.texts.set(self.delete_button.setText, lambda: self.tr("Delete"))
        self.delete_button.clicked.connect(self._ask_delete)
        # Export the open conversation; import ChatGPT's or Open WebUI's (the notice says how it went).
        self.conversation_menu = ConversationMenu(self._service, self._bridge, lambda: self.conversation_id)
        self.conversation_menu.reported.connect(self._report)
        self.conversation_menu.imported.connect(self._show_imported)
        sidebar = QWidget()
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(0, 0, 8, 0)
        top = QHBoxLayout()  # the menu beside "New chat": under the list it widened the column past the smallest window
        top.addWidget(self.new_button, 1)
        top.addWidget(self.conversation_menu)
        side.addLayout(top)
        side.addWidget(self.search)
        side.addWidget(self.conversation_list, 1)
        row = QHBoxLayout()
        row.addWidget(self.rename_button)
        row.addWidget(self.delete_button)
        side.addLayout(row)
        return sidebar

    def _build_header(self) -> QVBoxLayout:
        """The model's name on its row, then where replies run, model, engine and the panel toggles
        (the engine state and load bar are placed under them by :meth:`_build`)."""
        self.model_label = ElidedLabel()  # long model file names shorten instead of clipping
        self.model_label.setObjectName("pageTitle")
        # A picker of the library's models, as LM Studio's, with "Browse…" for any file on disk.
        self.model_button = QPushButton(self.tr("Choose model…"))
        # Named from the chat's state, so a language switch re-names it the same way.
        keep_translated(self.model_button, lambda: self._name_model_button(self._service.model), now=False)
        self.model_menu = QMenu(self.model_button)
        self.model_menu.aboutToShow.connect(self._fill_model_menu)
        self.model_button.setMenu(self.model_menu)
        self.engine_button = QPushButton()
        self.texts.set(self.engine_button.setText, lambda: self.tr("Engine folder…"))
        self.texts.set(self.engine_button.setToolTip, lambda: self.tr("Choose the folder of an installed llama.cpp engine"))
        self.engine_button.clicked.connect(self.choose_engine_folder)
        self.run_on = QComboBox()
        # Its items come after the first show (remote engines are added any time): sized by them.
        self.run_on.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        # Never narrower than its text: at the smallest window the row's buttons give way instead.
        self.run_on.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.texts.set(self.run_on.setToolTip, lambda: self.tr("Where replies are computed: this computer or a remote engine"))
        self.run_on.currentIndexChanged.connect(self._on_run_on_changed)
        self.run_on.setVisible(self._remote is not None)
        self.engine_state = QLabel()
        self.engine_state.setObjectName("muted")
        self.engine_state.setWordWrap(True)
        self.engine_state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton()
        self.retry_button.clicked.connect(self.retry_preferred_engine)
        self.retry_button.hide()
        self.settings_toggle = QToolButton()
        self.texts.set(self.settings_toggle.setText, lambda: self.tr("Settings"))
        self.settings_toggle.setCheckable(True)
        self.load_options_toggle = QToolButton()
        self.texts.set(self.load_options_toggle.setText, lambda: self.tr("Load options"))
        self.load_options_toggle.setCheckable(True)
        self.tools_toggle = QToolButton()
        self.texts.set(self.tools_toggle.setText, lambda: self.tr("Tools"))
        self.texts.set(self.tools_toggle.setToolTip, lambda: self.tr("MCP tool servers the model may call (every call asks you first)"))
        self.tools_toggle.setCheckable(True)
        self.tools_toggle.toggled.connect(self.show_tools)
        self.tools_toggle.setVisible(self._tools is not None)
        self.load_bar = QProgressBar()
        self.load_bar.setRange(0, 0)
        self.load_bar.setTextVisible(False)
        self.load_bar.setFixedHeight(6)
        self.load_bar.hide()
        # The model's name shares its row only with the panel toggles (beside six controls it was cut
        # to "No mo…hosen"; it shortens itself); the model and engine choices have the row below (in one
        # row with the toggles they were cut at the smallest window).
        head = QVBoxLayout()
        head.setSpacing(4)
        title = QHBoxLayout()
        title.addWidget(self.model_label, 1)
        title.addWidget(self.settings_toggle)
        title.addWidget(self.load_options_toggle)
        title.addWidget(self.tools_toggle)
        head.addLayout(title)
        controls = QHBoxLayout()
        controls.addWidget(self.run_on)
        controls.addWidget(self.model_button)
        controls.addWidget(self.engine_button)
        controls.addWidget(self.retry_button)
        controls.addStretch(1)
        head.addLayout(controls)
        return head

    def _build_panels(self) -> QHBoxLayout:
        """The notice, and the conversation settings and load options panels (shown by their toggles)."""
        self.notice = NoticeBanner()
        self.notice.text.setTextFormat(Qt.TextFormat.PlainText)  # notices quote tool servers and engines
        self.notice.details_requested.connect(self._show_notice_details)
        self.notice.action_requested.connect(self.accept_engine_switch)
        self.notice.action_requested.connect(self._continue_with_current_model)
        self._switch_offer: EngineSwitchOffer | None = None  # the offer the notice's action accepts
        self.settings_panel = ConversationSettingsPanel()
        self.settings_panel.hide()
        self.settings_panel.changed.connect(self._save_conversation_settings)
        # A changed system prompt or sampling is read ahead again once the typing pauses.
        self._read_again = QTimer(self)
        self._read_again.setSingleShot(True)
        self._read_again.setInterval(READ_AGAIN_MS)
        self._read_again.timeout.connect(lambda: self._service.viewing(self.conversation_id))
        self.settings_toggle.toggled.connect(self.settings_panel.setVisible)
        self.preset_bar: PresetBar | None = None
        if self._presets is not None:
            from strata_gui.ui.chat.presets import PresetBar

            self.preset_bar = PresetBar(self._presets, self.settings_panel, self._service, lambda: self.conversation_id,
                                        enabled_tools=self._enabled_tools if self._tools else None,
                                        set_tools=self._set_tools if self._tools else None)
            self.preset_bar.reported.connect(self._report)
            self.preset_bar.applied.connect(lambda _p: self._read_again.start())
            form = self.settings_panel.layout()
            assert isinstance(form, QFormLayout)
            form.insertRow(0, self.tr("Preset"), self.preset_bar)
        # Load options sit next to the conversation settings: both are shown before a load.
        self.load_options_panel: LoadOptionsPanel | None = None
        if self._load_options is not None:
            resolve = self._resolve
            self.load_options_panel = LoadOptionsPanel(
                self._load_options, self._bridge, gpu_picks=self._gpu_picks, choose_devices=self._choose_devices,
                run_device=(lambda model: resolve(model).run_device) if resolve is not None else None)
            self.load_options_panel.hide()
            self.load_options_panel.saved.connect(self._update_meter)
            self.load_options_toggle.toggled.connect(self.load_options_panel.activate)
        else:
            self.load_options_toggle.hide()
        settings_row = QHBoxLayout()
        settings_row.addWidget(self.settings_panel, 1)
        if self.load_options_panel is not None:
            settings_row.addWidget(self.load_options_panel, 1)
        self._settings_row = settings_row
        return settings_row

    def _scrolled_panels(self, row: QHBoxLayout) -> QScrollArea:
        """The panels in a scroll area that is as tall as they are while there is room, and scrolls
        when there is not (at 820×560 Load options' rows were squeezed on top of each other)."""
        inner = QWidget()
        inner.setLayout(row)
        area = QScrollArea()
        area.setWidget(inner)
        area.setWidgetResizable(True)
        area.setFrameShape(QFrame.Shape.NoFrame)
        area.setSizeAdjustPolicy(QScrollArea.SizeAdjustPolicy.AdjustToContents)
        area.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        area.setMinimumHeight(0)
        area.hide()

        def fit() -> None:  # shown while a panel is, at the height the panels need
            shown = self.settings_panel.isVisibleTo(inner) or (
                self.load_options_panel is not None and self.load_options_panel.isVisibleTo(inner))
            area.setVisible(shown)
            area.updateGeometry()

        # After the panels' own slots (connected when they were built): they are shown or hidden by then.
        self.settings_toggle.toggled.connect(lambda _on: fit())
        self.load_options_toggle.toggled.connect(lambda _on: fit())
        self.panels_area = area
        return area

    def _build_message_list(self) -> None:
        """The loaded page of messages in a scroll area, and the empty state, in :attr:`stack`."""
        self.earlier_button = QPushButton()
        self.texts.set(self.earlier_button.setText, lambda: self.tr("Show earlier messages"))
        self.earlier_button.clicked.connect(self.load_earlier)
        self.earlier_button.hide()
        self.messages_box = QWidget()
        self.messages_layout = QVBoxLayout(self.messages_box)
        self.messages_layout.setSpacing(10)
        self.messages_layout.addWidget(self.earlier_button)
        self.messages_layout.addStretch(1)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setWidget(self.messages_box)
        bar = self.scroll_area.verticalScrollBar()
        bar.rangeChanged.connect(self._keep_at_bottom)
        bar.valueChanged.connect(self._track_bottom)
        self.empty_state = QLabel()
        self.empty_state.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_state.setObjectName("muted")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty_state)
        self.stack.addWidget(self.scroll_area)
        self.find_bar = FindBar(self.scroll_area, prepare=self.finish_loading)  # Ctrl+F
        self.find_bar.closed.connect(self._focus_input)

    def _build_input_row(self) -> QHBoxLayout:
        """The message input with Send / Stop / Attach image (the attachment strip and context
        meter are placed around it by :meth:`_build`)."""
        self.edit_hint = QLabel()
        self.edit_hint.setObjectName("muted")
        self.edit_hint.hide()
        self.input = ChatInput()
        self.input.submitted.connect(self.send_text)
        self.input.images_received.connect(self._add_raw_images)
        self.input.models_received.connect(self.use_dropped_models)
        self.input.take_audio = self.take_audio
        self.attachments = AttachmentStrip()
        self.attachments.changed.connect(self._on_attachments_changed)
        self.documents_panel: DocumentsPanel | None = None
        if self._documents is not None:
            self.input.takes_files = True
            self.input.files_received.connect(self.attach_files)
            self.documents_panel = DocumentsPanel(self._documents, self._bridge, settings=self._service.settings_service,
                                                  embedding_models=self._embedding_models)
            self.documents_panel.reported.connect(self._report)
        self.attach_button = QPushButton()
        self.texts.set(self.attach_button.setText, lambda: self.tr("Attach…"))
        self.texts.set(self.attach_button.setToolTip, lambda: self.tr(
            "Attach documents (PDF, Word, HTML, Markdown, text, code: the reply cites them) or pictures for a "
            "vision model; you can also paste or drop them"))
        self.attach_button.clicked.connect(self.choose_images)
        self.send_button = QPushButton()
        self.texts.set(self.send_button.setText, lambda: self.tr("Send"))
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(lambda: self.send_text(self.input.toPlainText()))
        self.stop_button = QPushButton()
        self.texts.set(self.stop_button.setText, lambda: self.tr("Stop"))
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.hide()
        self.context_meter = QProgressBar()
        self.context_meter.setFixedHeight(14)
        self.texts.set(self.context_meter.setToolTip, lambda: self.tr("Context used by this conversation / context size"))
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.attach_button)
        buttons.addStretch(1)
        input_row = QHBoxLayout()
        input_row.addWidget(self.input, 1)
        input_row.addLayout(buttons)
        self.voice: VoiceInput | None = None
        if self._transcribe is not None:
            self.voice = VoiceInput(self._bridge, self._transcribe)
            self.voice.transcribed.connect(self.insert_transcript)
            self.voice.problem.connect(lambda err: self.notice.show_message(error_line(err), "warning"))
            buttons.insertWidget(buttons.count() - 1, self.voice)
        return input_row

    def insert_transcript(self, text: str) -> None:
        """Put what was said in the message box at the cursor, for editing before it is sent."""
        if not text:
            self.notice.show_message(self.tr("No speech was heard in the recording."), "info")
            return
        cursor = self.input.textCursor()
        before = self.input.toPlainText()[:cursor.position()]
        cursor.insertText(text if not before or before.endswith((" ", "\n")) else " " + text)
        self.input.setTextCursor(cursor)
        self.input.setFocus()

    # -- navigation ------------------------------------------------------------------------------
    def on_shown(self) -> None:
        if self.shortcuts is None:  # made when first shown: not on the way to the first paint
            from strata_gui.ui.chat.shortcuts import add_chat_shortcuts

            self.shortcuts = add_chat_shortcuts(self)
        self._prepare_spares_later()
        self.refresh_run_on()
        self.refresh_conversations()
        if self.conversation_id is None and self.conversation_list.count():
            self.conversation_list.setCurrentRow(0)
        self.input.setFocus()

    def refresh_conversations(self) -> None:
        if not self._list_elides:
            # long titles end in "…" (the whole title is the item's tooltip) instead of a sideways scroll
            self.conversation_list.setTextElideMode(Qt.TextElideMode.ElideRight)
            self.conversation_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self._list_elides = True
        current = self.conversation_id
        self.conversation_list.blockSignals(True)
        self.conversation_list.clear()
        for hit in self._search_hits():
            conv = hit.conversation
            # the core names a new conversation "New chat": shown in the UI's language
            title = self.tr("New chat") if conv.title == DEFAULT_TITLE else conv.title
            snippet = hit.snippet.replace(MARK_START, "").replace(MARK_END, "")
            item = QListWidgetItem(f"{title}\n{snippet}" if snippet else title)  # where the search found it
            item.setData(Qt.ItemDataRole.UserRole, conv.id)
            item.setToolTip(self._ran_on_text(f"{title}\n{snippet}" if snippet else title, conv.ran_on))
            self.conversation_list.addItem(item)
            if conv.id == current:
                self.conversation_list.setCurrentItem(item)
        self.conversation_list.blockSignals(False)
        has = self.conversation_id is not None
        self.rename_button.setEnabled(has)
        self.delete_button.setEnabled(has)

    def _report(self, text: str, level: str) -> None:
        self.notice.show_message(text, level)  # (the notice is built after the sidebar)

    def _show_imported(self, result: ImportResult) -> None:
        self.refresh_conversations()
        if result.conversation_ids:
            self.open_conversation(result.conversation_ids[0])
            self.refresh_conversations()

    def _search_hits(self) -> list[SearchHit]:
        """The conversations the search box asks for (all of them when it is empty), by full-text search."""
        try:
            return search_conversations(self._service.store, self.search.text())
        except StrataError as exc:
            self.notice.show_message(error_line(exc), "error")
            return []

    def _ran_on_text(self, title: str, ran_on: str) -> str:
        """The conversation's tooltip: its title and where its latest reply ran."""
        kind, _, where = ran_on.partition(":")
        if kind == "remote":
            text = self.tr("{0}\nLast reply: remote engine {1}").format(title, where)
        elif kind == "local":
            text = self.tr("{0}\nLast reply: this computer ({1})").format(title, where)
        else:
            text = title
        # As written: a title like "<h1>BIG</h1> why does <br> break" made Qt render the tooltip as HTML.
        return "<qt>" + html.escape(text).replace("\n", "<br>") + "</qt>"

    def _on_conversation_selected(self, item: QListWidgetItem | None, _prev: QListWidgetItem | None) -> None:
        if item is not None:
            self.open_conversation(int(item.data(Qt.ItemDataRole.UserRole)))

    def _focus_input(self) -> None:
        self.input.setFocus()  # (built after the find bar: looked up when called)

    def new_conversation(self) -> int:
        conv = self._service.new_conversation()
        self.open_conversation(conv.id)
        self.refresh_conversations()
        self.input.setFocus()
        return conv.id

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        self._service.store.rename(conversation_id, title)
        self.refresh_conversations()

    def delete_conversation(self, conversation_id: int) -> None:
        handle = self.reply_handle
        if handle is not None and handle.is_running and self._reply_conversation_id == conversation_id:
            # Its reply is being written: stopped first (the engine stops too), deleted once it is saved.
            handle.finished.connect(lambda: self.delete_conversation(conversation_id))
            handle.cancel()
            return
        self._service.store.delete_conversation(conversation_id)
        if self._documents is not None:
            # Its documents' links (and documents no chat has) go, off the GUI thread: a long
            # document's index takes seconds to delete.
            documents = self._documents
            self._bridge.run(lambda _p: documents.forget_deleted(), name=self.tr("Forget the conversation's documents"))
        if conversation_id == self.conversation_id:
            self.conversation_id = None
            if self.documents_panel is not None:
                self.documents_panel.show_conversation(None)
            self._service.viewing(None)
            self._clear_message_list()
            self.stack.setCurrentWidget(self.empty_state)
        self.refresh_conversations()

    def _ask_rename(self) -> None:
        if self.conversation_id is None:
            return
        conv = self._service.store.conversation(self.conversation_id)
        title, ok = QInputDialog.getText(self, self.tr("Rename conversation"), self.tr("Title:"),
                                         text=conv.title if conv else "")
        if ok and title.strip():
            self.rename_conversation(self.conversation_id, title)

    def _ask_delete(self) -> None:
        if self.conversation_id is None:
            return
        answer = QMessageBox.question(self, self.tr("Delete conversation"),
                                      self.tr("Delete this conversation and all its messages?"))
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_conversation(self.conversation_id)

    # -- messages --------------------------------------------------------------------------------
    def open_conversation(self, conversation_id: int) -> None:
        conv = self._service.store.conversation(conversation_id)
        if conv is None:
            return
        self.conversation_id = conversation_id
        if self.documents_panel is not None:
            self.documents_panel.show_conversation(conversation_id)
        self._cancel_edit()
        if self.find_bar.isVisible():  # its matches were in the conversation that goes
            self.find_bar.close_bar()
        self._clear_message_list()
        page = self._service.store.messages(conversation_id, limit=PAGE_SIZE)
        self._loaded_all = len(page) < PAGE_SIZE or self._service.store.count_messages(conversation_id) == len(page)
        self._backfill = page[:-FIRST_SCREEN]
        for msg in page[-FIRST_SCREEN:]:
            # A reply being written shows all of its text so far (its saved copy may be a second old).
            self._add_widget(self._service.live_reply(msg) if msg.status == STREAMING else msg)
        if self._backfill:
            QTimer.singleShot(BACKFILL_DELAY_MS, self, self._backfill_step)
        self.earlier_button.setVisible(not self._loaded_all)
        self.settings_panel.load(conv.system_prompt, conv.sampling, conv.structured_output)
        if self.preset_bar is not None:
            self.preset_bar.refresh()  # shows the preset this conversation's settings match
        self.resume_model(conversation_id)
        self._service.viewing(conversation_id)  # its next request is read ahead while the user types
        self.stack.setCurrentWidget(self.scroll_area)
        self._stick_to_bottom = True
        self._update_actions()
        self._update_meter()
        self.rename_button.setEnabled(True)
        self.delete_button.setEnabled(True)

    def resume_model(self, conversation_id: int) -> None:
        """A reopened conversation goes on with the model it was last answered with; when that file
        is gone, the notice says so and offers to continue with the chat's model. While a reply is
        being written the model stays (its end calls this again)."""
        if self.is_busy:
            return
        if self._model_gone_in is not None:
            self._model_gone_in = None
            self.notice.hide()
        resume = self._service.resume_model(conversation_id)
        if resume.outcome == MODEL_SWITCHED:
            self._model_changed()
        elif resume.outcome == MODEL_MISSING and resume.model is not None:
            self._switch_offer = None
            self._model_gone_in = conversation_id
            text = self.tr("This conversation was answered by {0}, which is no longer on disk.").format(
                resume.model.name)
            current = resume.current.name if resume.current is not None else ""
            text += " " + (self.tr("The next reply comes from {0}.").format(current) if current
                           else self.tr("Choose a model above to go on."))
            self.notice.show_message(text, "warning",
                                     action=self.tr("Continue with {0}").format(current) if current else "")

    def _continue_with_current_model(self) -> None:
        """The notice's action for a conversation whose model is gone: it keeps the chat's model from now."""
        conversation_id, self._model_gone_in = self._model_gone_in, None
        model = self._service.model
        if conversation_id is None or model is None:
            return
        self._service.conversations.remember_model(self._service.conversations.get(conversation_id), model)
        self.notice.hide()

    def _backfill_step(self) -> None:
        """Build a few more of the open page's older messages above the shown ones."""
        if not self._backfill:
            return
        step, self._backfill = self._backfill[-BACKFILL_STEP:], self._backfill[:-BACKFILL_STEP]
        for offset, msg in enumerate(step):
            self._add_widget(msg, index=1 + offset)
        if self._backfill:
            QTimer.singleShot(BACKFILL_DELAY_MS, self, self._backfill_step)

    def finish_loading(self) -> None:
        """Build the rest of the open page's messages now (they are otherwise built a few per loop turn)."""
        while self._backfill:
            self._backfill_step()

    def load_earlier(self) -> None:
        """Load the previous page of messages above the ones shown."""
        self.finish_loading()
        if self.conversation_id is None or not self.message_widgets:
            return
        first = min(self.message_widgets)
        page = self._service.store.messages(self.conversation_id, limit=PAGE_SIZE, before_id=first)
        for offset, msg in enumerate(page):
            self._add_widget(msg, index=1 + offset)
        self._loaded_all = len(page) < PAGE_SIZE
        self.earlier_button.setVisible(not self._loaded_all)

    def _clear_message_list(self) -> None:
        self._backfill = []
        for w in self.message_widgets.values():
            self.messages_layout.removeWidget(w)
            w.deleteLater()
        self.message_widgets.clear()
        self._said.clear()
        self._dirty.clear()

    def _add_widget(self, msg: Message, index: int | None = None) -> MessageWidget:
        spare = self._spares.pop(msg.role, None) if not msg.images else None
        if spare is not None:
            spare.set_message(msg)
        w = spare or self._new_widget(msg)
        position = self.messages_layout.count() - 1 if index is None else index  # before the stretch
        self.messages_layout.insertWidget(position, w)
        if spare is not None:
            spare.show()  # hidden on purpose while spare, so the layout does not show it by itself
            self._prepare_spares_later()
        self.message_widgets[msg.id] = w
        if self.waiting_text and msg.role == "assistant" and msg.status == STREAMING:
            w.set_waiting(self.waiting_text)  # the pool said why before the reply was shown
        for message_id, call_id in self._approvals:  # a question asked while another conversation was open
            if message_id == msg.id:
                self._show_question(message_id, call_id)
        return w

    def _new_widget(self, msg: Message) -> MessageWidget:
        w = MessageWidget(msg, self.messages_box, said=self._said)
        w.edit_requested.connect(self.begin_edit)
        w.regenerate_requested.connect(lambda _id: self.regenerate())
        w.answer_step_requested.connect(self.switch_answer)
        w.retry_unparsed_requested.connect(lambda _id: self.retry_without_format_parsing())
        w.tool_decided.connect(self._tool_decided)
        w.citation_opened.connect(self.open_citation)
        return w

    @property
    def spares_ready(self) -> bool:
        """Whether the next message and its reply get bubbles prepared ahead (a quicker send)."""
        return len(self._spares) == 2

    def _prepare_spares_later(self, delay_ms: int = SPARE_DELAY_MS) -> None:
        QTimer.singleShot(max(YIELD_MS, delay_ms), self, self._prepare_spare)

    def _prepare_spare(self) -> None:
        """Build and style one hidden bubble for a role that has none (idle work), so sending a
        message only fills them; the next one is built on a later loop turn.

        Building, styling and laying out the two bubbles of a send took about 10 ms on 2 cores;
        done at send time it delayed the request and the reply's first paint.
        """
        if self.is_busy:
            return  # not while a reply streams: the reply's end prepares them
        role = next((r for r in ("user", "assistant") if r not in self._spares), None)
        if role is None:
            return
        placeholder = Message(-1, -1, role, "…", STREAMING if role == "assistant" else COMPLETE, 0.0)
        spare = self._new_widget(placeholder)
        spare.hide()
        spare.resize(self.messages_box.width(), spare.sizeHint().height())
        spare.ensurePolished()
        self._spares[role] = spare
        self._prepare_spares_later(0)

    def _update_actions(self) -> None:
        busy = self.is_busy
        last_assistant = max((i for i, w in self.message_widgets.items() if w.message.role == "assistant"),
                             default=None)
        choice = (1, 1)
        if last_assistant is not None and self.conversation_id is not None and not busy:
            choice = self._service.answer_choice(self.conversation_id)
        for i, w in self.message_widgets.items():
            w.regenerate_button.setVisible(i == last_assistant and not busy)
            if i == last_assistant or w.answer_switch is not None:
                w.show_answer_choice(*(choice if i == last_assistant else (1, 1)))
            w.edit_button.setEnabled(not busy)
        self.send_button.setVisible(not busy)
        self.stop_button.setVisible(busy)

    # -- sending -----------------------------------------------------------------------------------
    @property
    def is_busy(self) -> bool:
        return self.reply_handle is not None and self.reply_handle.is_running

    # -- images ----------------------------------------------------------------------------------
    def choose_images(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(
            self, self.tr("Attach documents or images"), "",
            self.tr("Documents and images (*.pdf *.docx *.html *.htm *.md *.txt *.png *.jpg *.jpeg *.gif *.bmp);;"
                    "All files (*)"))
        self.attach_files([Path(f) for f in files])

    def attach_files(self, files: list[Path]) -> TaskHandle | None:
        """Attach files: pictures to the next message (one that is not a usable image is reported),
        documents to the conversation (indexed; a bad one is reported), a recording to the speech
        engine (its words land in the message box). Returns the indexing task."""
        recordings = [f for f in files if f.name.lower().endswith(AUDIO_SUFFIXES)]
        if recordings and self.voice is not None:
            self.voice.transcribe(recordings[0])
            files = [f for f in files if f not in recordings]
        self._add_raw_images([(f.read_bytes() if f.is_file() else b"", f.name) for f in files if is_image(f)])
        return self.attach_documents([f for f in files if not is_image(f)])

    def attach_documents(self, files: list[Path]) -> TaskHandle | None:
        """Index documents into the open conversation (a new one when none is open)."""
        if not files or self.documents_panel is None:
            return None
        if self.conversation_id is None:
            self.new_conversation()
        assert self.conversation_id is not None
        return self.documents_panel.attach(self.conversation_id, files)

    def open_citation(self, citation: Citation) -> PassageDialog | None:
        """Show the passage a citation names (a PDF at its page, the passage marked)."""
        if self._documents is None:
            return None
        dialog = PassageDialog(self._documents, self._bridge, citation, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def attach_image(self, data: bytes, name: str = "") -> bool:
        """Attach one image's bytes; False (and a notice saying why) when it cannot be sent."""
        try:
            if not self.attachments.images:
                self._service.check_images_accepted()
            image = ChatImage.from_bytes(data, name)
        except StrataError as exc:
            self.notice.show_message(error_line(exc), "warning")
            return False
        self.attachments.add(image)
        return True

    def _add_raw_images(self, items: list[tuple[bytes, str]]) -> None:
        for data, name in items:
            if not self.attach_image(data, name):
                break

    # -- drops: a GGUF becomes the chat's model, a picture an attachment -------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        mime = event.mimeData()
        event.acceptProposedAction()
        if self.take_audio(mime):
            return
        models = model_files(mime)
        if models:
            self.use_dropped_models(models)
        files = local_files(mime)
        if files and self.documents_panel is not None:  # pictures and documents, each where it goes
            self.attach_files(files)
            return
        pictures = raw_images(mime)
        if pictures:
            self._add_raw_images(pictures)

    def take_audio(self, mime: QMimeData) -> bool:
        """A dropped recording is transcribed into the message box (not attached as a picture)."""
        recordings = audio_files(mime)
        if not recordings or self.voice is None:
            return False
        self.voice.transcribe(recordings[0])
        return True

    def use_dropped_models(self, paths: list[Path]) -> TaskHandle | None:
        """Add dropped GGUF files to the library (kept after a restart) and chat with the first one
        that is a chat model; the notice says why the others cannot be used here."""
        open_model = self._open_model
        if open_model is None:
            self.set_model(paths[0])
            return None

        async def add(_p: ProgressCallback) -> list[LibraryEntry]:
            return [await open_model(p) for p in paths]

        handle = self._bridge.run(add, name=self.tr("Add dropped model"))
        handle.succeeded.connect(self._use_dropped_entries)
        self.drop_handle = handle
        return handle

    def _use_dropped_entries(self, entries: list[LibraryEntry]) -> None:
        usable = [e for e in entries if not e.refusal_for(TEXT)]
        if usable:
            self.set_model(usable[0].path)
        refused = [core_text(e.refusal_for(TEXT)) for e in entries if e.refusal_for(TEXT)]
        if refused:
            self._switch_offer, self._model_gone_in = None, None
            self.notice.show_message(" ".join(refused) + " " + self.tr(
                "The Chat page uses chat models; the file stays in your library (Models page)."), "warning")
        self.library_task = None
        self.refresh_library()  # the picker lists it from now

    def _on_attachments_changed(self) -> None:
        self.input.has_attachments = bool(self.attachments.images)

    def send_text(self, text: str) -> TaskHandle | None:
        """Send ``text`` with the attached images (or resend an edited message) in the open conversation."""
        if self.is_busy or not (text.strip() or (self.attachments.images and self.editing_message_id is None)):
            return None
        if self.conversation_id is None:
            self.new_conversation()
        assert self.conversation_id is not None
        conv_id, svc = self.conversation_id, self._service
        self._sent_input = self.input.toPlainText()
        if self.editing_message_id is not None:
            message_id = self.editing_message_id
            self._cancel_edit()
            self._drop_widgets_from(message_id + 1)
            widget = self.message_widgets.get(message_id)
            if widget is not None:
                widget.text = text
                widget.render_text()
            return self._start(lambda p: svc.edit_and_resend(message_id, text, p), self.tr("Edit and resend"))
        images = self.attachments.take()
        return self._start(lambda p: svc.send(conv_id, text, p, images=images), self.tr("Chat reply"))

    def regenerate(self) -> TaskHandle | None:
        if self.is_busy or self.conversation_id is None:
            return None
        conv_id, svc = self.conversation_id, self._service
        last_user = max((i for i, w in self.message_widgets.items() if w.message.role == "user"), default=None)
        if last_user is not None:
            self._drop_widgets_from(last_user + 1)
        return self._start(lambda p: svc.regenerate(conv_id, p), self.tr("Regenerate reply"))

    def switch_answer(self, step: int) -> bool:
        """Show the previous (-1) or next (+1) kept answer to the last question (Regenerate keeps them)."""
        if self.is_busy or self.conversation_id is None:
            return False
        try:
            switched = self._service.switch_answer(self.conversation_id, step)
        except StrataError as exc:
            self.notice.show_message(error_line(exc), "error")
            return False
        if switched:
            self.open_conversation(self.conversation_id)
        return switched

    def retry_without_format_parsing(self) -> TaskHandle | None:
        """Answer the last question again with the model's engine reloaded without chat-format parsing."""
        if self.is_busy or self.conversation_id is None:
            return None
        conv_id, svc = self.conversation_id, self._service
        last_user = max((i for i, w in self.message_widgets.items() if w.message.role == "user"), default=None)
        if last_user is not None:
            self._drop_widgets_from(last_user + 1)
        return self._start(lambda p: svc.retry_without_format_parsing(conv_id, p),
                           self.tr("Retry without format parsing"))

    def _start(self, make: CoroutineFactory, name: str) -> TaskHandle:
        # Errors are shown here, except a format failure: the reply itself says it, with its retry.
        handle = self._bridge.run(make, name=name, show_errors=False)
        handle.failed.connect(lambda err: None if isinstance(err, ChatFormatError)
                              else self._bridge.error_occurred.emit(err))
        self.reply_handle = handle
        self._reply_conversation_id = self.conversation_id
        self._next_render = 0.0  # the new reply's first text renders at once, however the last one ended
        handle.finished.connect(lambda: self._on_reply_finished() if self.reply_handle is handle else None)
        # The input and the Stop button change when the core announces the messages, right after
        # the request left: repainting them here would delay the request by a paint.
        return handle

    def _on_reply_finished(self) -> None:
        self.reply_handle = None
        self._sent_input = None  # not announced (the send failed first): the text stays to send again
        self._flush_renders()
        self._update_actions()
        # The end of a reply is the loop's longest busy moment: the reply's last text is painted
        # first, the conversation list (title, where it ran) is rebuilt on the next turn, and the
        # meter already moved with the reply's final update (MessageUpdated).
        QTimer.singleShot(YIELD_MS, self, self.refresh_conversations)
        self._prepare_spares_later()
        if self.conversation_id is not None and self.conversation_id != self._reply_conversation_id:
            self.resume_model(self.conversation_id)  # opened while the reply was written: its model now

    def stop(self) -> None:
        if self.reply_handle is not None:
            self.reply_handle.cancel()

    def begin_edit(self, message_id: int) -> None:
        widget = self.message_widgets.get(message_id)
        if widget is None or self.is_busy:
            return
        self.editing_message_id = message_id
        self.input.setPlainText(widget.text)
        self.edit_hint.setText(self.tr("Editing your message: Enter resends it and replaces the replies after it."))
        self.edit_hint.show()
        self.input.setFocus()

    def _cancel_edit(self) -> None:
        self.editing_message_id = None
        self.edit_hint.hide()

    def _drop_widgets_from(self, message_id: int) -> None:
        for i in [i for i in self.message_widgets if i >= message_id]:
            w = self.message_widgets.pop(i)
            w.forget_warnings()
            self.messages_layout.removeWidget(w)
            w.deleteLater()
            self._dirty.discard(i)

    # -- events from the core ----------------------------------------------------------------------
    def _on_event(self, event: ChatEvent) -> None:
        if isinstance(event, MessageDelta):
            widget = self.message_widgets.get(event.message_id)
            if widget is not None:
                # The answer's first text after a long thinking: the renders of a long thinking
                # text are spaced out (RENDER_SHARE), which held it back 23-32 ms (bench/stream.py
                # --content thinking).
                answer_starts = bool(event.text) and not widget.text
                widget.append(event.text)
                if event.thinking:
                    widget.append_thinking(event.thinking)
                widget.set_live(event.tokens, event.tool)
                self._show_live_context(event)
                self._dirty.add(event.message_id)
                if event.complete or answer_starts:
                    self._flush_renders()  # the answer's start and the reply's end are shown at once
                else:
                    self._schedule_render()
        elif isinstance(event, MessageAdded):
            # The core announces a reply's messages once its request is sent: building their
            # bubbles here overlaps the engine's prompt processing.
            msg = event.message
            if msg.conversation_id == self.conversation_id and msg.id not in self.message_widgets:
                self._add_widget(msg)
                self._stick_to_bottom = True
                if self._sent_input is not None:  # the sent text moves from the input to the conversation
                    if self.input.toPlainText() == self._sent_input:
                        self.input.clear()
                    self._sent_input = None
                self._update_actions()
        elif isinstance(event, MessageUpdated):
            widget = self.message_widgets.get(event.message.id)
            if widget is not None:
                self._dirty.discard(event.message.id)
                widget.set_message(event.message)
                if event.message.status != STREAMING:
                    self._update_meter()
        elif isinstance(event, ReplyProgress):
            widget = self.message_widgets.get(event.message_id)
            if widget is not None:
                widget.set_progress(event)
        elif isinstance(event, EngineStatus):
            self._show_engine_state(event.state, event.detail)
        elif isinstance(event, PlanChanged):
            self._show_engine_state(self._service.engine_state, "")
        elif isinstance(event, EngineSwitchOffer):
            self._switch_offer, self._model_gone_in = event, None
            self.notice.show_message(event.text, "info", action=self.tr("Switch to %s") % core_text(event.engine.label))
        elif isinstance(event, Notice):
            self._switch_offer, self._model_gone_in = None, None
            # A notice may quote a tool server (its last words on stderr): shown as text, escapes visible.
            self._notice_details = shown(event.details)
            self.notice.show_message(shown(core_text(event.text)), "warning", has_details=bool(event.details))

    def _on_pool_event(self, event: PoolEvent) -> None:
        """The reply being written says why it waits for its engine (another request holds its
        slots, the benchmark holds the engine, memory is being made), until its request is served."""
        if not isinstance(event, PoolActivity):
            return
        user = self._service.chat_engine.USER
        text = next((core_text(w.reason) for w in event.waiting if w.user == user and w.reason), "")
        if text == self.waiting_text:
            return
        self.waiting_text = text
        reply = max((w for w in self.message_widgets.values()
                     if w.message.role == "assistant" and w.message.status == STREAMING),
                    key=lambda w: w.message.id, default=None)
        if reply is not None:
            reply.set_waiting(text)

    def _schedule_render(self) -> None:
        if self._render_timer.isActive():
            return  # the text gathered until then goes out with that render
        wait = self._next_render - time.perf_counter()
        if wait <= 0:
            self._flush_renders()
        else:
            self._render_timer.start(math.ceil(wait * 1000))

    def _flush_renders(self) -> None:
        self._render_timer.stop()
        if not self._dirty:
            return
        started, cpu = time.perf_counter(), time.thread_time()
        painted = 0.0
        for message_id in self._dirty:
            widget = self.message_widgets.get(message_id)
            if widget is not None:
                painted += widget.take_paint_cost()  # painting the previous render
                widget.render_text()
                # Lay out the bubble and the list now: left to posted events, each nesting level
                # took a turn of its own, with a paint in between (the text, then again scrolled).
                bubble_layout = widget.layout()
                if bubble_layout is not None:
                    bubble_layout.activate()
        self.messages_layout.activate()
        self._dirty.clear()
        # A long paragraph costs more to lay out and paint: space frames so they stay a small share
        # of the CPU, which the engine needs. CPU time, not wall time: a render the OS preempted
        # did not cost more.
        cost = time.thread_time() - cpu + painted
        self._next_render = started + min(MAX_RENDER_GAP_S, max(FRAME_S, RENDER_SHARE * cost))

    def _keep_at_bottom(self, _min: int, maximum: int) -> None:
        if self._stick_to_bottom:
            self.scroll_area.verticalScrollBar().setValue(maximum)

    def _track_bottom(self, value: int) -> None:
        bar = self.scroll_area.verticalScrollBar()
        self._stick_to_bottom = value >= bar.maximum() - 24

    # -- model and engine --------------------------------------------------------------------------
    def _show_model(self) -> None:
        model = self._service.model
        self.model_label.setText(model.name if model else self.tr("No model chosen"))
        self.model_label.setToolTip(str(model) if model else "")
        # With a model already chosen (the guide, the last session) asking to choose one misleads.
        if model is None:
            self.empty_state.setText(self.tr(
                "<h3>Start a conversation</h3><p>Choose a model (a .gguf file) above, then type a message below.<br>"
                "Strata starts the engine for you and switches to another engine if one fails.</p>"))
        else:
            self.empty_state.setText(self.tr(
                "<h3>Start a conversation</h3><p>Type a message below to chat with {0}.<br>"
                "Strata starts the engine for you and switches to another engine if one fails.</p>")
                .format(html.escape(model.name)))
        self._name_model_button(model)
        panel = self.load_options_panel
        if panel is not None and panel.model != model:
            panel.set_model(model)

    def _name_model_button(self, model: Path | None) -> None:
        """The picker names the chat's model once one is chosen ("Choose model…" after a choice read as
        if none was made); a long file name is shortened in its middle, where quantisations differ least."""
        if model is None:
            self.model_button.setText(self.tr("Choose model…"))
            return
        metrics = self.model_button.fontMetrics()
        self.model_button.setText(metrics.elidedText(model.name, Qt.TextElideMode.ElideMiddle,
                                                     metrics.averageCharWidth() * MODEL_BUTTON_CHARS))

    def refresh_library(self) -> TaskHandle | None:
        """Read the library's chat models for the picker (off the event loop's paint path)."""
        if self._library is None or (self.library_task is not None and self.library_task.is_running):
            return self.library_task
        library = self._library
        handle = self._bridge.run(lambda _p: library(), name="Find chat models", show_errors=False)

        def got(paths: list[Path]) -> None:
            self.library_models = list(paths)
            if self.model_menu.isVisible():
                self._fill_model_menu()

        handle.succeeded.connect(got)
        self.library_task = handle
        return handle

    def _fill_model_menu(self) -> None:
        menu = self.model_menu
        if not menu.isVisible() and (self.library_task is None or not self.library_task.is_running):
            self.refresh_library()  # what was downloaded meanwhile shows as soon as it is read
        menu.clear()
        current = self._service.model
        if not self.library_models:
            reading = self.library_task is not None and self.library_task.is_running
            empty = menu.addAction(self.tr("Reading your library…") if reading
                                   else self.tr("No models in your library yet"))
            empty.setEnabled(False)
        for path in self.library_models[:40]:
            action = menu.addAction(path.name)
            action.setToolTip(str(path))
            action.setCheckable(True)
            action.setChecked(path == current)
            action.triggered.connect(lambda _checked=False, p=path: self.set_model(p))
        menu.addSeparator()
        menu.addAction(self.tr("Browse for a GGUF file…"), self.choose_model)

    def choose_model(self) -> None:
        start = str(self._service.model.parent) if self._service.model else ""
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Choose a model"), start,
                                              self.tr("GGUF models (*.gguf)"))
        if path:
            self.set_model(Path(path))

    def set_model(self, path: Path) -> None:
        self._service.set_model(path)
        if self._model_gone_in is not None:  # a model chosen: the conversation goes on with it
            self._model_gone_in = None
            self.notice.hide()
        self._model_changed()

    def _model_changed(self) -> None:
        """Another model was chosen: the header says what its engine does now (the last model's
        "engine ready" stayed until the new one had loaded; no engine event says the model changed)."""
        self._show_engine_state(self._service.engine_state, "")

    def choose_engine_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Choose an engine folder"))
        if folder:
            self.set_engine_folder(Path(folder))

    def set_engine_folder(self, folder: Path) -> TaskHandle | None:
        """Check the build in ``folder`` and make it the chat's engine for this session (core decides)."""
        if self._use_engine_folder is None:
            return None
        use = self._use_engine_folder
        handle = self._bridge.run(lambda p: use(folder, p), name=self.tr("Check engine folder"))
        handle.succeeded.connect(lambda _spec: self._show_engine_state(ServerState.STOPPED, ""))
        self.engine_handle = handle
        return handle

    def accept_engine_switch(self) -> TaskHandle | None:
        """Switch to the engine the depth offer named: re-plan at that depth and reload now."""
        offer, self._switch_offer = self._switch_offer, None
        if offer is None or self.is_busy:
            return None
        self.notice.hide()
        svc = self._service
        self.engine_handle = self._bridge.run(lambda p: svc.accept_depth_switch(offer.depth, p),
                                              name=self.tr("Switch engine"))
        return self.engine_handle

    def retry_preferred_engine(self) -> TaskHandle | None:
        if self.is_busy:
            return None
        svc = self._service
        self.notice.hide()
        self.engine_handle = self._bridge.run(svc.retry_preferred_engine,
                                              name=self.tr("Start preferred engine"))
        return self.engine_handle

    def refresh_run_on(self) -> None:
        """Fill the engine chooser: this computer, then each remote engine (keeps the choice)."""
        if self._remote is None:
            return
        try:
            endpoints = self._remote.endpoints()
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            endpoints = []
        current = self._service.remote
        current_id = getattr(getattr(current, "endpoint", None), "id", None)
        self.run_on.blockSignals(True)
        self.run_on.clear()
        self.run_on.addItem(self.tr("This computer"), "")
        for ep in endpoints:
            self.run_on.addItem(self.tr("Remote: {0}").format(ep.label), ep.id)
        index = self.run_on.findData(current_id) if current_id else 0
        if index < 0:  # the endpoint was removed: back to the local engine
            index = 0
            self._service.set_remote(None)
        self.run_on.setCurrentIndex(index)
        self.run_on.blockSignals(False)
        self._show_engine_state(self._service.engine_state, "")

    def use_remote(self, endpoint_id: str | None) -> None:
        """Answer through the remote engine ``endpoint_id`` (None or "": this computer)."""
        if not endpoint_id or self._remote is None:
            self._service.set_remote(None)
        else:
            try:
                self._service.set_remote(self._remote.client(self._remote.get(endpoint_id)))
            except StrataError as exc:
                self._bridge.error_occurred.emit(exc)
                self._service.set_remote(None)
        self.refresh_run_on()

    def _on_run_on_changed(self, index: int) -> None:
        if index >= 0:
            self.use_remote(self.run_on.itemData(index) or None)

    def _show_engine_state(self, state: ServerState, detail: str) -> None:
        remote = self._service.remote
        if remote is not None:
            self.model_label.setText(remote.label)
            self.model_label.setToolTip("")
            self.engine_state.setText(self.tr("● Remote engine: {0}").format(remote.label))
            self.load_bar.hide()
            self.retry_button.hide()
            self.model_button.setEnabled(False)
            self.engine_button.setEnabled(False)
            self._offer_load_options(remote=True)
            self._update_meter()
            return
        self.model_button.setEnabled(True)
        self.engine_button.setEnabled(True)
        self._offer_load_options(remote=False)
        self._show_model()
        engine = self._service.engine
        label = core_text(engine.label) if engine else ""
        if not self._service.plan:
            text = self.tr("No engine chosen: pick an engine folder.")
        elif state is ServerState.STARTING:
            text = self.tr("Starting the {0} engine…").format(label)
        elif state is ServerState.LOADING:
            text = self.tr("Loading the model on {0}… {1}").format(label, core_text(detail))
        elif state is ServerState.READY and self._service.on_fallback_engine and self._service.preferred_engine:
            # Another engine than the one announced: the notice above says why.
            text = self.tr("● {0} engine ready, instead of {1} (see the notice above)").format(
                label, core_text(self._service.preferred_engine.label))
        elif state is ServerState.READY:
            text = self.tr("● {0} engine ready").format(label)
            resolution = self._resolve(self._service.model) if self._resolve is not None else None
            where = resolution.run_device if resolution is not None else None
            if where is not None and where.on_cpu and engine is not None and resolution is not None \
                    and resolution.chosen is not None and resolution.chosen.id == engine.id:
                text += " · " + self.tr("runs on the CPU")
        elif state in (ServerState.CRASHED, ServerState.FAILED):
            text = self.tr("{0} engine failed: {1}").format(label, core_text(detail))
        else:
            text = self._announce_engine()
        self.engine_state.setText(text)
        self.load_bar.setVisible(state in (ServerState.STARTING, ServerState.LOADING))
        preferred = self._service.preferred_engine
        show_retry = state is ServerState.READY and self._service.on_fallback_engine and preferred is not None
        if show_retry and preferred is not None:
            self.retry_button.setText(self.tr("Retry {0}").format(core_text(preferred.label)))
        self.retry_button.setVisible(show_retry)
        self._update_meter()

    def _offer_load_options(self, *, remote: bool) -> None:
        """Load options set how this computer loads a model: a remote engine loads its own, so they are
        closed and off while it answers, and the toggle's tooltip says why."""
        toggle = self.load_options_toggle
        if remote and toggle.isChecked():
            toggle.setChecked(False)
        toggle.setEnabled(not remote)
        toggle.setToolTip(self.tr("A remote engine loads its model with its own options") if remote else "")

    def _announce_engine(self) -> str:
        """Which engine the next reply starts, and why; then the installed engines left out."""
        preferred = self._service.preferred_engine
        if preferred is None:
            return ""
        lines = [self.tr("Engine: {0} (starts with your first message)").format(core_text(preferred.label))]
        if preferred.reason:
            lines.append(self.tr("Why: {0}").format(core_text(preferred.reason)))
        resolution = self._resolve(self._service.model) if self._resolve is not None else None
        if resolution is not None:
            lines += [self.tr("Not used: {0} — {1}").format(v.label, core_text(v.reason))
                      for v in resolution.left_out]
        self.engine_state.setToolTip(resolution.report() if resolution is not None else "")
        return "\n".join(lines)

    def _show_notice_details(self) -> None:
        box = QMessageBox(self)
        box.setWindowTitle(self.tr("Engine log"))
        box.setText(self.notice.text.text())
        box.setDetailedText(self._notice_details)
        box.open()

    # -- tools ---------------------------------------------------------------------------------------
    async def _approve(self, approval: ToolApproval) -> Decision:
        """Ask about one tool call in the conversation, under the call, and wait for the answer.

        Stop cancels the wait (the reply's task is cancelled): the question goes away with it."""
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        key = (approval.message_id, approval.call_id)
        self._approvals[key] = (future, approval.request)
        self._show_question(*key)
        try:
            return await future
        finally:
            self._approvals.pop(key, None)
            widget = self.message_widgets.get(approval.message_id)
            if widget is not None:
                widget.stop_asking(approval.call_id)

    def _show_question(self, message_id: int, call_id: str) -> None:
        entry = self._approvals.get((message_id, call_id))
        widget = self.message_widgets.get(message_id)
        if entry is not None and widget is not None:
            request = entry[1]
            widget.ask_tool(call_id, request.server, request.description)

    @property
    def pending_approvals(self) -> list[tuple[int, str]]:
        """Tool calls waiting for an answer: (message id, call id)."""
        return list(self._approvals)

    def answer_tool_call(self, message_id: int, call_id: str, decision: str) -> None:
        """The user's answer to a tool call: ``"allow_once"``, ``"always"`` or ``"deny"``."""
        self._tool_decided(message_id, call_id, decision)

    def _tool_decided(self, message_id: int, call_id: str, decision: str) -> None:
        from strata_gui.core.tools import Decision

        entry = self._approvals.get((message_id, call_id))
        if entry is not None and not entry[0].done():
            entry[0].set_result(Decision(decision))

    def show_tools(self, on: bool = True) -> ToolsPanel | None:
        """Show (``on``) or hide the Tools panel; it is built (and the servers read) when first shown."""
        if self._tools is None:
            return None
        if on and self.tools_panel is None:
            from strata_gui.ui.chat.tools_panel import ToolsPanel

            store, host = self._tools()
            self.tools_panel = ToolsPanel(store, host, self._bridge)
            self._settings_row.addWidget(self.tools_panel, 1)
        if self.tools_panel is not None:
            self.tools_panel.setVisible(on)
        if self.tools_toggle.isChecked() != on:
            self.tools_toggle.setChecked(on)
        return self.tools_panel

    def _enabled_tools(self) -> list[str]:
        assert self._tools is not None
        return [server.name for server in self._tools()[0].enabled_servers()]

    def _set_tools(self, names: tuple[str, ...]) -> None:
        """Switch on exactly the tool servers ``names`` (a chosen preset's)."""
        assert self._tools is not None
        store = self._tools()[0]
        for server in store.servers():
            if server.enabled != (server.name in names):
                store.set_enabled(server.name, server.name in names)

    # -- settings and context ----------------------------------------------------------------------
    def _save_conversation_settings(self) -> None:
        if self.conversation_id is not None:
            self._service.store.update_settings(
                self.conversation_id, system_prompt=self.settings_panel.system_prompt.toPlainText(),
                sampling=self.settings_panel.sampling(), structured_output=self.settings_panel.structured_output())
            self._read_again.start()

    def _update_meter(self) -> None:
        used = self._service.context_used(self.conversation_id) if self.conversation_id is not None else 0
        self._context_before = used
        self._set_meter(used)

    def _show_live_context(self, event: MessageDelta) -> None:
        """While a reply streams, the meter counts its prompt and the tokens generated so far (it read
        the last finished reply's figure: 0 in a new conversation). Where the engine does not say how
        long the prompt was, the last measured context and the tokens so far (a lower bound)."""
        used = event.context or self._context_before + event.tokens
        if used != self.context_meter.value():
            self._set_meter(used)

    def _set_meter(self, used: int) -> None:
        size = max(1, self._service.context_size)
        meter = self.context_meter
        # QProgressBar repaints at once when its value changes, and that repaint paints every
        # pending change of the window with it (at a reply's end, its last text): with updates
        # off meanwhile, turning them on asks for an ordinary paint on the next frame instead.
        meter.setUpdatesEnabled(False)
        meter.setRange(0, size)
        meter.setValue(min(used, size))
        meter.setFormat(self.tr("Context: {0:,} / {1:,} tokens").format(used, size))
        meter.setUpdatesEnabled(True)
