"""Hugging Face hub: GGUF search with paging, model detail (card, files grouped by quant).

Search pages are fetched with the injected ``httpx.AsyncClient`` from the same
``GET {endpoint}/api/models`` query ``HfApi.list_models`` sends, following the ``Link: rel="next"``
header one page per call: ``list_models`` cannot stop after one page and resume later (its
``limit`` is both the page size and the total), and an async request is cancelled at once when
the user types on (a thread running ``list_models`` could not be). Model detail asks the same
``GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true`` that ``HfApi.model_info(files_metadata=True)``
sends, on the same client (cancellable, with a deadline, the token only for the hub's own origin),
and reads the few fields it needs from the answer itself (:func:`repo_info_from_json`, held to
huggingface_hub's ``ModelInfo`` by the tests; the app does not ship huggingface_hub).

A hub or a mirror controls every name in its answers; file names and the commit are checked
(:func:`~strata_gui.core.models.hub_files.check_remote_files`) before Strata uses them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

import httpx

from strata_gui.core.base.errors import HubError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.gguf_meta import SPLIT_RE, GGUFMetadata, quant_from_filename
from strata_gui.core.models.hub_errors import check_response, error_for_transport
from strata_gui.core.models.hub_files import (
    QuantEntry,
    RemoteFile,
    check_remote_files,
    safe_commit,
    safe_repo_id,
)
from strata_gui.core.models.projector import is_projector, projector_rank
from strata_gui.core.models.remote_header import read_remote_header
from strata_gui.core.net.transfer import credentials_for, within
from strata_gui.core.runtime.kinds import IMAGE, SPEECH, TEXT, EngineKind

_CHECK_ENDPOINT = QT_TRANSLATE_NOOP("Core", "Check the hub endpoint in Settings.")

SORTS = {"downloads": "downloads", "likes": "likes", "trending": "trendingScore", "updated": "lastModified"}
PAGE_SIZE = 30


@dataclass(frozen=True)
class RepoSummary:
    """One search hit."""

    repo_id: str
    downloads: int
    likes: int
    last_modified: datetime | None
    params: int | None
    gated: bool
    tags: tuple[str, ...] = ()

    @property
    def author(self) -> str:
        return self.repo_id.split("/", 1)[0]

    def to_json(self) -> dict[str, Any]:
        return {"repo_id": self.repo_id, "downloads": self.downloads, "likes": self.likes,
                "last_modified": self.last_modified.isoformat() if self.last_modified else None,
                "params": self.params, "gated": self.gated}


@dataclass(frozen=True)
class SearchPage:
    """Hits of one page; ``next_url`` fetches the following page (None on the last)."""

    items: tuple[RepoSummary, ...]
    next_url: str | None


@dataclass(frozen=True)
class ModelDetail:
    """What the detail view shows for one repo."""

    repo_id: str
    commit: str
    card: str
    gated: bool
    downloads: int
    likes: int
    quants: tuple[QuantEntry, ...]
    other_files: tuple[RemoteFile, ...] = field(default=())
    # IMAGE: a text-to-image repo, SPEECH: whisper.cpp models (ggml-*.bin); their single-file
    # model variants are ``images``, not ``quants``
    kind: EngineKind = TEXT
    images: tuple[QuantEntry, ...] = field(default=())

    @property
    def files(self) -> list[RemoteFile]:
        """Every file of the repo."""
        return [f for q in self.quants + self.images for f in q.files] + list(self.other_files)

    @property
    def projectors(self) -> tuple[RemoteFile, ...]:
        """The repo's vision projectors (``mmproj-*.gguf``); empty for a text-only model."""
        return tuple(f for f in self.other_files if is_projector(f.path))

    @property
    def vision(self) -> bool:
        return bool(self.projectors)

    def projector_for(self, quant: QuantEntry) -> RemoteFile | None:
        """The projector to download with ``quant``: one in the same folder (the preferred
        precision), else one at the repo root; None when the repo has none."""
        folder = PurePosixPath(quant.first.path).parent
        near = [f for f in self.projectors if PurePosixPath(f.path).parent == folder]
        pool = near or [f for f in self.projectors if PurePosixPath(f.path).parent == PurePosixPath(".")]
        return min(pool, key=lambda f: projector_rank(f.path)) if pool else None

    def to_json(self) -> dict[str, Any]:
        return {"repo_id": self.repo_id, "commit": self.commit, "gated": self.gated, "downloads": self.downloads,
                "likes": self.likes, "kind": self.kind.name, "quants": [q.to_json() for q in self.quants],
                "images": [q.to_json() for q in self.images],
                "projectors": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.projectors]}


def _parse_date(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class RepoInfo:
    """What the model API says about one revision of a repo (the fields the detail view uses)."""

    sha: str | None
    files: tuple[RemoteFile, ...]
    pipeline_tag: str | None
    tags: tuple[str, ...]
    gated: bool
    downloads: int
    likes: int


def _file_from_json(item: Any) -> RemoteFile:
    """One ``siblings`` entry: its path, size (the LFS size when the entry has none) and LFS hash."""
    if not isinstance(item, dict) or not isinstance(item.get("rfilename"), str):
        raise TypeError("a file entry without a name")
    lfs = item.get("lfs")
    if lfs is not None and not isinstance(lfs, dict):
        raise TypeError(f"the LFS entry of {item['rfilename']} is not an object")
    size = item.get("size") or (lfs or {}).get("size") or 0
    sha256 = (lfs or {}).get("sha256")
    if isinstance(size, bool) or not isinstance(size, int) or not (sha256 is None or isinstance(sha256, str)):
        raise TypeError(f"the size or hash of {item['rfilename']} is not one")
    return RemoteFile(item["rfilename"], size, sha256)


def repo_info_from_json(data: Any) -> RepoInfo:
    """The model API's answer for a revision (``/api/models/{repo}/revision/{rev}?blobs=true``).

    Raises:
        TypeError: the answer is not a model's details (a field has the wrong shape).
    """
    if not isinstance(data, dict):
        raise TypeError("not an object")
    siblings = data.get("siblings") or []
    tags = data.get("tags") or []
    sha, pipeline = data.get("sha"), data.get("pipeline_tag")
    if not isinstance(siblings, list) or not isinstance(tags, list) or not all(
            v is None or isinstance(v, str) for v in (sha, pipeline)):
        raise TypeError("a field has the wrong shape")
    return RepoInfo(sha, tuple(_file_from_json(s) for s in siblings), pipeline, tuple(str(t) for t in tags),
                    bool(data.get("gated")), int(data.get("downloads") or 0), int(data.get("likes") or 0))


def summary_from_json(item: dict[str, Any]) -> RepoSummary:
    gguf = item.get("gguf") if isinstance(item.get("gguf"), dict) else {}
    safetensors = item.get("safetensors") if isinstance(item.get("safetensors"), dict) else {}
    params = (gguf or {}).get("total") or (safetensors or {}).get("total")
    return RepoSummary(
        repo_id=str(item.get("id") or item.get("modelId")),
        downloads=int(item.get("downloads") or 0),
        likes=int(item.get("likes") or 0),
        last_modified=_parse_date(item.get("lastModified")),
        params=int(params) if isinstance(params, int | float) else None,
        gated=bool(item.get("gated")),
        tags=tuple(str(t) for t in item.get("tags") or ()),
    )


# mmproj files are vision projectors that go with a model, not models of their own.
def _is_model_gguf(path: str) -> bool:
    return PurePosixPath(path).name.lower().endswith(".gguf") and not is_projector(path)


def group_quants(files: list[RemoteFile]) -> tuple[list[QuantEntry], list[RemoteFile]]:
    """GGUF files grouped into download units (split sets as one entry); the rest separately."""
    singles: list[QuantEntry] = []
    splits: dict[str, list[tuple[int, RemoteFile]]] = {}
    others: list[RemoteFile] = []
    for f in files:
        if not _is_model_gguf(f.path):
            others.append(f)
            continue
        name = PurePosixPath(f.path).name
        m = SPLIT_RE.match(name)
        if m:
            key = str(PurePosixPath(f.path).parent / m.group("prefix"))
            splits.setdefault(key, []).append((int(m.group("no")), f))
        else:
            singles.append(QuantEntry(quant_from_filename(name) or name.removesuffix(".gguf"), name, (f,)))
    for key, parts in splits.items():
        parts.sort(key=lambda p: p[0])
        first = PurePosixPath(parts[0][1].path).name
        label = quant_from_filename(first) or quant_from_filename(key) or PurePosixPath(key).name
        singles.append(QuantEntry(label, f"{PurePosixPath(key).name} ({len(parts)} parts)", tuple(f for _, f in parts)))
    singles.sort(key=lambda q: q.size)
    return singles, others


class HubClient:
    """Talks to one hub endpoint (the hub or a mirror).

    Args:
        client: Shared async HTTP client (search, card, ranged header reads).
        endpoint: Hub base URL from Settings.
        token: Returns the access token for gated repos, or None (never logged).
        deadline: Seconds one request may take in all (default
            :data:`~strata_gui.core.net.transfer.REQUEST_DEADLINE`).
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        endpoint: str,
        token: Callable[[], str | None],
        *,
        deadline: float | None = None,
    ) -> None:
        self._client = client
        self.endpoint = endpoint.rstrip("/")
        self._token = token
        self._deadline = deadline
        self._headers: dict[tuple[str, str, str], GGUFMetadata] = {}

    def auth_headers(self) -> dict[str, str]:
        token = self._token()
        return {"Authorization": f"Bearer {token}"} if token else {}

    def resolve_url(self, repo_id: str, path: str, revision: str = "main") -> str:
        return f"{self.endpoint}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"

    async def search(self, text: str = "", sort: str = "downloads", *, page_size: int = PAGE_SIZE,
                     next_url: str | None = None, kind: EngineKind = TEXT) -> SearchPage:
        """One page of repos matching ``text`` (``next_url`` from the previous page continues).

        ``kind``: repos of that kind's models, with its hub filters (``kind.hub_search``: GGUF repos
        for the chat, text-to-image repos for images, asked for the way ``HfApi.list_models`` does).
        """
        if next_url is None:
            params: list[tuple[str, str | int | float | bool | None]] = [*kind.hub_search, ("sort", SORTS.get(sort, sort)),
                                             ("limit", str(page_size)),
                                             ("expand", "downloads"), ("expand", "likes"),
                                             ("expand", "lastModified"), ("expand", "gguf"),
                                             ("expand", "gated"), ("expand", "tags")]
            if text.strip():
                params.append(("search", text.strip()))
            request = self._client.build_request("GET", f"{self.endpoint}/api/models", params=params,
                                                 headers=self.auth_headers())
        else:
            # The next page's address comes from the answer: the token goes only to the hub.
            request = self._client.build_request("GET", next_url,
                                                 headers=credentials_for(next_url, self.endpoint, self.auth_headers()))
        try:
            resp = await within(self._client.send(request), self._deadline, "the model search")
        except httpx.RequestError as exc:
            raise error_for_transport(exc, self.endpoint) from exc
        check_response(resp, "the model search", self.endpoint)
        try:
            data = resp.json()
        except json.JSONDecodeError as exc:
            raise HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} sent something that is not a "
                                                       "search result."), endpoint=self.endpoint),
                           hint=_CHECK_ENDPOINT) from exc
        if not isinstance(data, list):
            raise HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} sent an unexpected search "
                                                       "answer."), endpoint=self.endpoint),
                           hint=_CHECK_ENDPOINT)
        nxt = resp.links.get("next", {}).get("url")
        return SearchPage(tuple(summary_from_json(i) for i in data if isinstance(i, dict)), nxt)

    async def detail(self, repo_id: str, revision: str = "main") -> ModelDetail:
        """Repo info (files with sizes and LFS hashes) from the model API, plus the model card."""
        info = await self._model_info(safe_repo_id(repo_id), revision)
        files = list(info.files)
        # A file name becomes a path in the cache (and may become the default download): one
        # with ``../`` or a drive in it is refused here, before anything else sees it.
        check_remote_files(files, endpoint=self.endpoint)
        if info.sha:
            safe_commit(info.sha, endpoint=self.endpoint)
        from strata_gui.core.models.hub_images import image_variants, is_image_repo
        from strata_gui.core.models.speech_models import is_speech_repo, speech_variants

        images: list[QuantEntry] = []
        quants: list[QuantEntry] = []
        if is_image_repo(info.pipeline_tag, list(info.tags)):
            kind, (images, others) = IMAGE, image_variants(files)
        elif is_speech_repo(files):
            kind, (images, others) = SPEECH, speech_variants(files)
        else:
            kind, (quants, others) = TEXT, group_quants(files)
        card = ""
        if any(f.path == "README.md" for f in files):
            card = await self._card(repo_id, info.sha or revision)
        return ModelDetail(repo_id, info.sha or revision, card, info.gated, info.downloads, info.likes,
                           tuple(quants), tuple(others), kind, tuple(images))

    async def _model_info(self, repo_id: str, revision: str) -> RepoInfo:
        """The model API's answer for the repo, with each file's size and LFS hash."""
        url = f"{self.endpoint}/api/models/{repo_id}/revision/{quote(revision, safe='')}"
        try:
            resp = await within(self._client.get(url, params={"blobs": "true"}, headers=self.auth_headers(),
                                                 follow_redirects=True), self._deadline, f"the details of {repo_id}")
        except httpx.RequestError as exc:
            raise error_for_transport(exc, self.endpoint) from exc
        check_response(resp, repo_id, self.endpoint)
        try:
            return repo_info_from_json(resp.json())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} sent something that is not a "
                                                       "model's details for {repo}."),
                             endpoint=self.endpoint, repo=repo_id),
                           hint=_CHECK_ENDPOINT, details=repr(exc)) from exc

    async def _card(self, repo_id: str, revision: str) -> str:
        try:
            resp = await within(self._client.get(self.resolve_url(repo_id, "README.md", revision),
                                                 headers=self.auth_headers(), follow_redirects=True),
                                self._deadline, "the model card")
        except httpx.RequestError as exc:
            raise error_for_transport(exc, self.endpoint) from exc
        if not resp.is_success:
            return ""
        return strip_front_matter(resp.text)

    async def header(self, repo_id: str, commit: str, path: str) -> GGUFMetadata:
        """The GGUF header of a repo file, read with Range requests; cached per commit."""
        key = (repo_id, commit, path)
        cached = self._headers.get(key)
        if cached is not None:
            return cached
        meta, _ = await read_remote_header(self._client, self.resolve_url(repo_id, path, commit),
                                           headers=self.auth_headers(), label=os.path.basename(path),
                                           endpoint=self.endpoint, deadline=self._deadline)
        self._headers[key] = meta
        return meta


    async def tensor_names(self, repo_id: str, commit: str, path: str) -> list[str]:
        """Tensor names of a repo's GGUF or safetensors file, read with Range requests."""
        if path.lower().endswith(".gguf"):
            return [t.name for t in (await self.header(repo_id, commit, path)).tensors]
        from strata_gui.core.models.hub_images import read_remote_safetensors_names

        return await read_remote_safetensors_names(self._client, self.resolve_url(repo_id, path, commit),
                                                   headers=self.auth_headers(), label=os.path.basename(path),
                                                   endpoint=self.endpoint, deadline=self._deadline)


def strip_front_matter(text: str) -> str:
    """A model card without its YAML metadata block."""
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4:].lstrip("\n")
    return text
