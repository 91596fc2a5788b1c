"""The local model library: the hub cache, folders the user added, single opened files.

Each model (a GGUF file or a whole split set) is described from its header; a file that is not
GGUF, is cut short or misses shards is listed as broken with the reason, never fails the scan.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import GGUFError, ModelError, StorageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.gguf_meta import (
    SPLIT_RE,
    GGUFMetadata,
    format_params,
    read_header,
)
from strata_gui.core.models.hub_cache import cached_repos
from strata_gui.core.models.image_models import ImageModelParts, image_parts, model_parts
from strata_gui.core.models.projector import is_projector, projector_rank
from strata_gui.core.models.speech_models import whisper_header
from strata_gui.core.runtime.kinds import EMBEDDING, IMAGE, RERANKER, SPEECH, TEXT, EngineKind

log = logging.getLogger(__name__)
_NOT_DELETED = QT_TRANSLATE_NOOP("Core", "Could not delete {name}: {reason}")
# A whole sentence per kind asked for: "a"/"an" differ ("not a image model" was read), and a
# translation needs the sentence, not the article.
_NOT_THIS_KIND = {
    TEXT.name: QT_TRANSLATE_NOOP("Core", "{name} is a {kind} model, not a chat model."),
    IMAGE.name: QT_TRANSLATE_NOOP("Core", "{name} is a {kind} model, not an image model."),
    EMBEDDING.name: QT_TRANSLATE_NOOP("Core", "{name} is a {kind} model, not an embedding model."),
    SPEECH.name: QT_TRANSLATE_NOOP("Core", "{name} is a {kind} model, not a speech model."),
    RERANKER.name: QT_TRANSLATE_NOOP("Core", "{name} is a {kind} model, not a reranker."),
}

SOURCE_HUB = "hub cache"
SOURCE_FOLDER = "folder"
SOURCE_OPENED = "opened"


@dataclass(frozen=True)
class LibraryEntry:
    """One local model.

    Attributes:
        path: The file to load (shard 1 of a split set).
        files: All files (one, or every shard); for hub-cache entries the snapshot paths.
        source: ``hub cache``, ``folder`` or ``opened``.
        repo_id: Hub repo for hub-cache entries.
        size: Bytes on disk.
        error: Why the model cannot be used (empty when fine).
        kind: The engine kind that runs it: a chat model, an embedding model (an encoder, or a GGUF
            with a pooling type), an image model (stable-diffusion.cpp, GGUF or safetensors) or a
            speech model (whisper.cpp's GGML ``.bin``, told by its header).
        image_family: For image models: "Stable Diffusion", "SDXL", "FLUX", ...
        image_missing: For image models: parts neither in the file nor found beside it.
        companions: For image models: the text encoder / VAE files found beside it.
    """

    path: Path
    files: tuple[Path, ...]
    source: str
    size: int
    repo_id: str | None = None
    architecture: str = ""
    params: int = 0
    quant: str = ""
    context_length: int = 0
    has_chat_template: bool = False
    name: str = ""
    error: str = ""
    projector: Path | None = None
    kind: EngineKind = TEXT
    image_family: str = ""
    image_missing: tuple[str, ...] = ()
    companions: tuple[Path, ...] = ()

    @property
    def vision(self) -> bool:
        """A projector was found next to the model: it can be sent images."""
        return self.projector is not None

    @property
    def broken(self) -> bool:
        return bool(self.error)

    def refusal_for(self, kind: EngineKind) -> str:
        """Why this file cannot be run as ``kind`` (a chat GGUF given to the Images page, an image
        model dropped on the Chat page); "" when it can."""
        if self.error:
            return self.error
        if self.kind == kind:
            return ""
        sentence = _NOT_THIS_KIND.get(kind.name, QT_TRANSLATE_NOOP("Core", "{name} is a {kind} model, not a {wanted} model."))
        return T(sentence, name=self.path.name, kind=self.kind.label, wanted=kind.label)

    @property
    def display_name(self) -> str:
        return self.path.name

    @property
    def params_text(self) -> str:
        return format_params(self.params) if self.params else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path), "files": [str(f) for f in self.files], "source": self.source,
            "repo_id": self.repo_id, "size": self.size, "architecture": self.architecture,
            "params": self.params, "quant": self.quant, "context_length": self.context_length,
            "chat_template": self.has_chat_template, "name": self.name, "error": self.error or None,
            "projector": str(self.projector) if self.projector else None,
            "kind": self.kind.name, "image_family": self.image_family or None,
            "image_missing": list(self.image_missing), "companions": [str(c) for c in self.companions],
        }


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _image_entry(path: Path, source: str, repo_id: str | None, size: int, parts: ImageModelParts,
                 params: int = 0, quant: str = "", name: str = "") -> LibraryEntry:
    companions = tuple(parts.companions.values())
    total = size + sum(_size(c) for c in companions)
    error = ""
    if parts.missing:
        error = T(QT_TRANSLATE_NOOP("Core", "This {family} model needs its {parts}: put the file(s) in the "
                                            "same folder (downloads from its repository)."),
                  family=parts.family, parts=" and ".join(parts.missing))
    return LibraryEntry(path, (path,), source, total, repo_id, architecture=parts.family, params=params, quant=quant,
                        name=name, error=error, kind=IMAGE, image_family=parts.family,
                        image_missing=parts.missing, companions=companions)


def _speech_entry(path: Path, source: str, repo_id: str | None) -> LibraryEntry:
    """A ``.bin`` file: a whisper.cpp speech model when its header says so."""
    header = whisper_header(path)
    if header is None:
        return LibraryEntry(path, (path,), source, _size(path), repo_id,
                            error=QT_TRANSLATE_NOOP("Core", "Not a model Strata can run (a .bin file that is no "
                                                            "whisper.cpp speech model)."))
    quant = {0: "F32", 1: "F16"}.get(header.ftype % 1000, f"type {header.ftype % 1000}")
    return LibraryEntry(path, (path,), source, _size(path), repo_id, architecture="whisper", quant=quant,
                        context_length=header.text_ctx, name=f"whisper {header.size_class}", kind=SPEECH)


def describe_model(path: Path, source: str, repo_id: str | None = None) -> LibraryEntry:
    """Read ``path`` (and its sibling shards) into a LibraryEntry; errors become ``error``.

    Image models (Stable Diffusion and relatives, GGUF or safetensors) are recognised by their
    tensor names and described with the parts they hold and the companion files beside them.
    """
    if path.suffix.lower() == ".bin":
        return _speech_entry(path, source, repo_id)
    if path.suffix.lower() == ".safetensors":
        parts = model_parts(path)
        if parts is None:
            return LibraryEntry(path, (path,), source, _size(path), repo_id,
                                error=QT_TRANSLATE_NOOP("Core", "Not a model Strata can run (a safetensors "
                                                                "file that is no image model)."))
        return _image_entry(path, source, repo_id, _size(path), parts)
    m = SPLIT_RE.match(path.name)
    files = [path]
    missing: list[str] = []
    if m:
        count = int(m.group("count"))
        files = [path.with_name(f"{m.group('prefix')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
        missing = [f.name for f in files if not f.exists()]
    size = sum(_size(f) for f in files)
    first = files[0]
    try:
        metas: list[GGUFMetadata] = []
        for f in files:
            if f.name in missing:
                continue
            metas.append(read_header(f))
        if missing:
            raise GGUFError(T(QT_TRANSLATE_NOOP("Core", "Split model is missing {missing} of {total} parts: "
                                                        "{names}."),
                              missing=len(missing), total=len(files), names=", ".join(missing)))
        head = metas[0]
    except ModelError as exc:
        return LibraryEntry(first, tuple(files), source, size, repo_id, error=exc.message)
    parts = image_parts((t.name for t in head.tensors), first)
    if parts is not None:
        return _image_entry(first, source, repo_id, size, parts, sum(mm.parameter_count for mm in metas),
                            head.quant or "", head.name or "")
    return LibraryEntry(
        first, tuple(files), source, size, repo_id,
        architecture=head.architecture,
        params=sum(mm.parameter_count for mm in metas),
        quant=head.quant or "",
        context_length=head.context_length or 0,
        has_chat_template=head.has_chat_template,
        name=head.name or "",
        projector=find_projector(first),
        kind=kind_of_gguf(head),
    )


# Encoder-only architectures: they embed text, they do not chat.
ENCODER_ARCHITECTURES = frozenset({"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3",
                                   "modern-bert", "neo-bert", "t5encoder"})


# llama.cpp's enum llama_pooling_type (include/llama.h of the pinned source): RANK attaches the
# classification head that scores a (query, document) pair.
POOLING_RANK = 4
# The classification head's tensors as llama.cpp's converter writes them (src/llama-arch.cpp:
# "cls", "cls.output", "cls.norm"); a BERT-style reranker has them whatever its pooling key says.
CLASSIFIER_TENSOR_PREFIX = "cls."


def is_reranker(meta: GGUFMetadata) -> bool:
    """A reranker: converted with pooling type "rank", or carrying a classifier head (``cls.*``)."""
    if meta.get(f"{meta.architecture}.pooling_type") == POOLING_RANK:
        return True
    return any(t.name.startswith(CLASSIFIER_TENSOR_PREFIX) for t in meta.tensors)


def kind_of_gguf(meta: GGUFMetadata) -> EngineKind:
    """The engine kind a (non-image) GGUF runs as: reranker, embedding or chat model."""
    if is_reranker(meta):
        return RERANKER
    return EMBEDDING if is_embedding_model(meta) else TEXT


def is_embedding_model(meta: GGUFMetadata) -> bool:
    """An embedding model: an encoder architecture, or a model converted with a pooling type
    (``<arch>.pooling_type``, which llama.cpp's converter writes only for embedding models)."""
    arch = meta.architecture
    return arch in ENCODER_ARCHITECTURES or meta.get(f"{arch}.pooling_type") is not None


def find_projector(model: Path) -> Path | None:
    """The vision projector that goes with ``model``: an ``mmproj*.gguf`` in the same folder.

    Hub repos and llama.cpp's conversions put the projector next to the model files, so a model
    downloaded by Strata (the hub cache snapshot keeps the repo layout) or copied by hand with its
    projector is paired the same way.
    """
    try:
        candidates = [p for p in model.parent.iterdir() if is_projector(p.name) and p.is_file()]
    except OSError:
        return None
    return min(candidates, key=lambda p: projector_rank(p.name)) if candidates else None


def _model_files(paths: Iterable[Path]) -> list[Path]:
    """GGUF files to list: shard 1 stands for its set; other shards, mmproj files are skipped.
    safetensors files are listed when they are image models (their companions are not)."""
    out = []
    for p in sorted(paths):
        name = p.name.lower()
        if name.endswith(".safetensors"):
            parts = model_parts(p)
            if parts is not None and parts.diffusion:
                out.append(p)
            continue
        if name.endswith(".bin"):
            if whisper_header(p) is not None:  # ggml-*.bin speech models; other .bin files are not models
                out.append(p)
            continue
        if not name.endswith(".gguf") or is_projector(name):
            continue
        m = SPLIT_RE.match(p.name)
        if m and int(m.group("no")) != 1:
            continue
        out.append(p)
    return out


class ModelLibrary:
    """Lists and deletes local models.

    Args:
        cache_dir: The hub cache.
        folders: Folders the user added (Settings.model_dirs); scanned recursively.
        kept: Single files the user added before (Settings.model_files).
        save_kept: Saves the kept files when they change (None: they last for this session).
    """

    def __init__(self, cache_dir: Path, folders: list[Path], kept: Sequence[Path] = (),
                 save_kept: Callable[[list[Path]], None] | None = None) -> None:
        self.cache_dir = cache_dir
        self.folders = folders
        self.opened: list[Path] = list(kept)
        self.kept: list[Path] = list(kept)
        self._save_kept = save_kept

    def open_file(self, path: Path) -> LibraryEntry:
        """Add a single file (Open GGUF…, drag and drop); return its entry (possibly broken)."""
        entry = describe_model(path, SOURCE_OPENED)
        if path not in self.opened:
            self.opened.append(path)
        return entry

    def keep(self, path: Path) -> None:
        """The user added ``path`` (Open GGUF…, a drop): it stays in the library after a restart.
        A file only inspected or served for a command is listed for this session."""
        if path not in self.kept:
            self.kept.append(path)
            self._kept_changed()

    def forget(self, path: Path) -> None:
        """``path`` was deleted: no longer listed, now or after a restart."""
        if path in self.opened:
            self.opened.remove(path)
        if path in self.kept:
            self.kept.remove(path)
            self._kept_changed()

    def _kept_changed(self) -> None:
        if self._save_kept is not None:
            self._save_kept(list(self.kept))

    def scan(self) -> list[LibraryEntry]:
        """Every model in the hub cache, the folders and the opened files (blocking: run in an executor)."""
        entries: list[LibraryEntry] = []
        seen: set[Path] = set()

        def add(entry: LibraryEntry) -> None:
            key = Path(os.path.abspath(entry.path))  # not resolve(): cache names may share one blob
            if key not in seen:
                seen.add(key)
                entries.append(entry)

        for path, repo_id in self._hub_cache_files():
            add(describe_model(path, SOURCE_HUB, repo_id))
        for folder in self.folders:
            for path in _model_files(_walk(folder)):
                add(describe_model(path, SOURCE_FOLDER))
        for path in self.opened:
            add(describe_model(path, SOURCE_OPENED))
        return entries

    def _hub_cache_files(self) -> list[tuple[Path, str]]:
        """Model files of every model repo in the hub cache, with the repo's id: each revision's
        files under ``models--org--name/snapshots/<commit>/`` (a link whose blob is gone is skipped)."""
        out: list[tuple[Path, str]] = []
        for repo_dir, repo_id in cached_repos(self.cache_dir):
            files = [p for p in _walk(repo_dir / "snapshots") if p.exists()]
            out.extend((p, repo_id) for p in _model_files(files))
        return out

    def delete(self, entry: LibraryEntry) -> int:
        """Delete a model's files; return the bytes freed.

        In the hub cache the snapshot links go, and their blobs when no other snapshot uses
        them; an emptied repo folder is removed entirely.
        """
        if entry.source == SOURCE_HUB:
            return self._delete_from_cache(entry)
        freed = 0
        for f in entry.files:
            try:
                size = _size(f)
                f.unlink()
                freed += size
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StorageError(T(_NOT_DELETED, name=f.name, reason=exc.strerror or exc),
                                   hint=QT_TRANSLATE_NOOP("Core", "Check the file is not in use and you may write "
                                                                  "to its folder.")) from exc
        if entry.path in self.opened:
            self.opened.remove(entry.path)
        return freed

    def _delete_from_cache(self, entry: LibraryEntry) -> int:
        repo_dir = _repo_dir_of(entry.path)
        if repo_dir is None:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "{path} is not inside the hub cache."), path=entry.path))
        blobs: set[Path] = set()
        try:
            for f in entry.files:
                if f.is_symlink():
                    blobs.add(Path(os.path.normpath(f.parent / os.readlink(f))))
                    f.unlink()
                elif f.exists():
                    blobs.add(f)
            still_used = {
                Path(os.path.normpath(p.parent / os.readlink(p)))
                for p in (repo_dir / "snapshots").rglob("*") if p.is_symlink()
            }
            freed = 0
            for blob in blobs - still_used:
                with contextlib.suppress(FileNotFoundError):
                    freed += _size(blob)
                    blob.unlink()
            for d in sorted((repo_dir / "snapshots").rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()
            snapshots = repo_dir / "snapshots"
            if not snapshots.exists() or not any(snapshots.iterdir()):
                shutil.rmtree(repo_dir)
        except OSError as exc:
            raise StorageError(T(_NOT_DELETED, name=entry.display_name, reason=exc.strerror or exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check the file is not in use by a running "
                                                              "model.")) from exc
        return freed


def _repo_dir_of(path: Path) -> Path | None:
    for parent in path.parents:
        if parent.name.startswith("models--") and (parent / "snapshots").exists():
            return parent
    return None


def _walk(folder: Path) -> list[Path]:
    out: list[Path] = []
    try:
        for root, _dirs, names in os.walk(folder):
            out.extend(Path(root) / n for n in names if n.lower().endswith((".gguf", ".safetensors", ".bin")))
    except OSError as exc:
        log.warning("cannot scan %s: %s", folder, exc)
    return out
