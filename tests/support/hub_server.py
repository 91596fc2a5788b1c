"""A loopback Hugging Face hub: the endpoints huggingface_hub 2.4 and Strata call, real files.

Answers (as the hub does, checked against huggingface_hub's source):
- ``GET /api/models?filter=&pipeline_tag=&search=&sort=&limit=&expand=`` with ``Link: <...>; rel="next"`` paging;
- ``GET /api/models/{repo}`` (and ``/revision/{rev}``): info with ``siblings`` (size, ``lfs.sha256``);
- ``GET /api/models/{repo}/tree/{rev}``: files with size, oid and ``lfs``;
- ``HEAD``/``GET /{repo}/resolve/{rev}/{file}``: ``ETag`` (the sha256 for LFS files),
  ``X-Repo-Commit``, ``Content-Length``, ``Accept-Ranges``; ``Range`` → 206. No ``X-Xet-Hash``.
- gated repos: file downloads answer 401 (``X-Error-Code: GatedRepo``) without the right token.
Failure injection (``fail_next``), cut-off downloads (``cut_after``) and corrupt bodies
(``corrupt``) let tests reproduce what goes wrong on real networks.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit


@dataclass
class HubRepo:
    """One model repository served by the loopback hub."""

    repo_id: str
    files: dict[str, Path | bytes]
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    downloads: int = 0
    likes: int = 0
    last_modified: str = "2026-10-01T12:00:00.000Z"
    gated: bool = False
    params: int | None = None
    tags: list[str] = field(default_factory=lambda: ["gguf", "text-generation"])
    pipeline_tag: str = "text-generation"
    library_name: str = "gguf"

    def data(self, name: str) -> bytes:
        src = self.files[name]
        return src if isinstance(src, bytes) else src.read_bytes()

    def read(self, name: str, start: int, end: int) -> bytes:
        """Bytes ``start..end`` (inclusive) of a file; a file on disk is not read whole (a header
        read of a 500 MB model asks for a few hundred KB)."""
        src = self.files[name]
        if isinstance(src, bytes):
            return src[start:end + 1]
        with open(src, "rb") as f:
            f.seek(start)
            return f.read(end - start + 1)


@dataclass
class _FileInfo:
    size: int
    sha256: str
    git_oid: str
    lfs: bool


class HubState:
    """What the server serves and how it misbehaves; tests mutate it between requests."""

    def __init__(self, repos: list[HubRepo], token: str = "hf_test_token_0123456789") -> None:
        self.repos = {r.repo_id: r for r in repos}
        self.token = token
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.fail_next: list[tuple[str, int]] = []  # (path substring, status) used once each
        self.cut_after: dict[str, int] = {}  # file name -> bytes sent before the connection drops
        self.corrupt: set[str] = set()  # file names served with a flipped byte
        self.chunk_delay = 0.0  # seconds between 256 KB pieces of a file body (a slow link)
        self.search_delay: dict[str, float] = {}  # search text -> seconds before answering
        self.lock = threading.Lock()
        self._infos: dict[tuple[str, str], _FileInfo] = {}

    def info(self, repo: HubRepo, name: str) -> _FileInfo:
        key = (repo.repo_id, name)
        if key not in self._infos:
            src = repo.files[name]
            size = len(src) if isinstance(src, bytes) else src.stat().st_size
            sha1, sha256 = hashlib.sha1(b"blob %d\0" % size), hashlib.sha256()
            for i in range(0, size, 8 << 20):  # in pieces: model files can be hundreds of MB
                piece = repo.read(name, i, min(size, i + (8 << 20)) - 1)
                sha1.update(piece)
                sha256.update(piece)
            lfs = name.endswith((".gguf", ".safetensors"))  # as the hub's .gitattributes sends them to LFS
            self._infos[key] = _FileInfo(size, sha256.hexdigest(), sha1.hexdigest(), lfs)
        return self._infos[key]

    def take_failure(self, path: str) -> int | None:
        with self.lock:
            for i, (needle, status) in enumerate(self.fail_next):
                if needle in path:
                    del self.fail_next[i]
                    return status
        return None


def _model_json(state: HubState, repo: HubRepo, *, siblings: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24],
        "id": repo.repo_id,
        "modelId": repo.repo_id,
        "author": repo.repo_id.split("/")[0],
        "sha": repo.commit,
        "downloads": repo.downloads,
        "likes": repo.likes,
        "lastModified": repo.last_modified,
        "createdAt": "2026-01-01T00:00:00.000Z",
        "private": False,
        "gated": "manual" if repo.gated else False,
        "disabled": False,
        "tags": repo.tags,
        "pipeline_tag": repo.pipeline_tag,
        "library_name": repo.library_name,
    }
    if repo.params is not None:
        out["gguf"] = {"total": repo.params, "architecture": "llama", "context_length": 4096}
    if siblings:
        sibs = []
        for name in sorted(repo.files):
            fi = state.info(repo, name)
            entry: dict[str, Any] = {"rfilename": name, "size": fi.size, "blobId": fi.git_oid}
            if fi.lfs:
                entry["lfs"] = {"sha256": fi.sha256, "size": fi.size, "pointerSize": 134}
            sibs.append(entry)
        out["siblings"] = sibs
        out["usedStorage"] = sum(s["size"] for s in sibs)
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _HubHTTPServer
    # One request per connection: no idle keep-alive handler threads outlive a test.
    protocol_version = "HTTP/1.0"
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing
    def _send_json(self, obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        if status == 429:
            headers["Retry-After"] = "30"
        self._send_json({"error": message}, status, headers)

    def _route(self) -> None:
        state = self.server.state
        split = urlsplit(self.path)
        path = unquote(split.path)
        query = parse_qs(split.query)
        with state.lock:
            state.requests.append((self.command, self.path, dict(self.headers.items())))
        failure = state.take_failure(path)
        if failure is not None:
            self._error(failure, f"injected {failure}")
            return
        if path == "/api/models":
            self._search(query)
            return
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(/.*)?", path)
        if m:
            self._tree(m.group(1))
            return
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
        if m:
            repo = state.repos.get(m.group(1))
            if repo is None:
                self._error(404, "Repository not found", "RepoNotFound")
            else:
                self._send_json(_model_json(state, repo, siblings=True))
            return
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            self._resolve(m.group(1), m.group(3))
            return
        self._error(404, "Not found")

    def do_GET(self) -> None:
        self._route()

    def do_HEAD(self) -> None:
        self._route()

    # -- endpoints
    def _search(self, query: dict[str, list[str]]) -> None:
        state = self.server.state
        filters = query.get("filter", [])
        text = (query.get("search") or [""])[0].lower()
        delay = state.search_delay.get(text)
        if delay:
            time.sleep(delay)
        sort = (query.get("sort") or ["downloads"])[0]
        limit = int((query.get("limit") or ["1000"])[0])
        offset = int((query.get("cursor") or ["0"])[0])
        pipeline = (query.get("pipeline_tag") or [""])[0]
        repos = [r for r in state.repos.values() if all(f in r.tags for f in filters) and text in r.repo_id.lower()
                 and (not pipeline or r.pipeline_tag == pipeline)]
        keys = {"downloads": lambda r: r.downloads, "likes": lambda r: r.likes,
                "lastModified": lambda r: r.last_modified, "trendingScore": lambda r: r.likes + r.downloads}
        repos.sort(key=keys.get(sort, keys["downloads"]), reverse=True)
        page = repos[offset:offset + limit]
        headers = {}
        if offset + limit < len(repos):
            q = {k: v for k, v in query.items() if k != "cursor"}
            q["cursor"] = [str(offset + limit)]
            host = self.headers.get("Host", "127.0.0.1")
            headers["Link"] = f'<http://{host}/api/models?{urlencode(q, doseq=True)}>; rel="next"'
        self._send_json([_model_json(state, r, siblings=False) for r in page], headers=headers)

    def _tree(self, repo_id: str) -> None:
        state = self.server.state
        repo = state.repos.get(repo_id)
        if repo is None:
            self._error(404, "Repository not found", "RepoNotFound")
            return
        items = []
        for name in sorted(repo.files):
            fi = state.info(repo, name)
            item: dict[str, Any] = {"type": "file", "path": name, "size": fi.size, "oid": fi.git_oid}
            if fi.lfs:
                item["lfs"] = {"oid": fi.sha256, "size": fi.size, "pointerSize": 134}
            items.append(item)
        self._send_json(items)

    def _resolve(self, repo_id: str, name: str) -> None:
        state = self.server.state
        repo = state.repos.get(repo_id)
        if repo is None or name not in repo.files:
            code = "RepoNotFound" if repo is None else "EntryNotFound"
            self._error(404, "Entry not found", code)
            return
        if repo.gated and self.headers.get("Authorization") != f"Bearer {state.token}":
            self._error(401, "Access to model is restricted. You must have access to it and be authenticated.", "GatedRepo")
            return
        fi = state.info(repo, name)
        size = fi.size
        etag = f'"{fi.sha256}"' if fi.lfs else f'"{fi.git_oid}"'
        start, end = 0, size - 1
        status = 200
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not m or int(m.group(1)) >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = int(m.group(1))
            end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("ETag", etag)
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if self.command == "HEAD":
            return
        src = repo.files[name]
        plain = name not in state.corrupt and name not in state.cut_after and not state.chunk_delay
        if plain and isinstance(src, Path):
            # Like the hub's CDN, whose CPU is not ours: the kernel sends the file.
            with open(src, "rb") as fh:
                try:
                    self.connection.sendfile(fh, start, end - start + 1)
                except OSError:  # the client went away
                    self.close_connection = True
            return
        data = repo.read(name, start, end)
        if name in state.corrupt and end == size - 1:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        body = memoryview(data)
        cut = state.cut_after.pop(name, None)
        if cut is not None:
            self.wfile.write(body[: max(0, cut - start)])
            self.wfile.flush()
            self.close_connection = True
            return
        try:
            for i in range(0, len(body), 256 * 1024):
                self.wfile.write(body[i:i + 256 * 1024])
                if state.chunk_delay:
                    self.wfile.flush()
                    time.sleep(state.chunk_delay)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, state: HubState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


@dataclass
class RunningHub:
    url: str
    state: HubState

    def resolve_url(self, repo_id: str, name: str, rev: str = "main") -> str:
        return f"{self.url}/{repo_id}/resolve/{rev}/{quote(name)}"


@contextmanager
def running_hub(repos: list[HubRepo]) -> Iterator[RunningHub]:
    """Serve ``repos`` on a free loopback port; always shut down (no thread left behind)."""
    state = HubState(repos)
    server = _HubHTTPServer(state)
    thread = threading.Thread(target=server.serve_forever, name="loopback-hub", kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield RunningHub(f"http://127.0.0.1:{server.server_address[1]}", state)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
