"""A loopback server speaking the GitHub Releases API and its download redirects.

- ``GET /api/repos/{owner}/{repo}/releases`` → release JSON with ``digest`` and
  ``browser_download_url``; ``ETag`` / ``If-None-Match`` → 304; ``rate_limit_reset`` set → 403
  with ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``.
- ``GET /{owner}/{repo}/releases/download/{tag}/{name}`` → 302 to ``/cdn/{id}/{name}``.
- ``/cdn/...`` serves the real file, honouring ``Range: bytes=N-``; faults: ``cut_after`` (close
  the connection after N body bytes of the next download), ``fail_next_download`` (answer the
  next download request with that status, e.g. 500, as a CDN hiccup does).

Counters (``api_requests``, ``body_bytes_sent``, ``ranges_seen``) let tests assert what
crossed the wire.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class ServedAsset:
    id: int
    repo: str
    tag: str
    name: str
    path: Path
    size: int
    sha256: str
    digest: str | None


@dataclass
class ServerState:
    releases: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    assets: dict[int, ServedAsset] = field(default_factory=dict)
    api_requests: int = 0
    not_modified: int = 0
    body_bytes_sent: int = 0
    downloads: int = 0
    ranges_seen: list[str] = field(default_factory=list)
    rate_limit_reset: int | None = None
    cut_after: int | None = None
    fail_next_download: int | None = None
    block_delay: float = 0.0  # seconds between 256 KiB blocks: a slow link, so a Cancel lands mid-download
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        st = self.server.state
        path = self.path.split("?", 1)[0]
        if path.startswith("/api/repos/") and path.endswith("/releases"):
            self._releases(path[len("/api/repos/"):-len("/releases")])
        elif "/releases/download/" in path:
            repo, rest = path.lstrip("/").split("/releases/download/", 1)
            tag, name = rest.split("/", 1)
            for a in st.assets.values():
                if a.repo == repo and a.tag == tag and a.name == name:
                    self.send_response(302)
                    self.send_header("Location", f"{self.server.base}/cdn/{a.id}/{a.name}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            self._json(404, {"message": "Not Found"})
        elif path.startswith("/cdn/"):
            self._cdn(int(path.split("/")[2]))
        else:
            self._json(404, {"message": "Not Found"})

    def _releases(self, repo: str) -> None:
        st = self.server.state
        with st.lock:
            st.api_requests += 1
        if st.rate_limit_reset is not None:
            self._json(403, {"message": "API rate limit exceeded for 127.0.0.1."},
                       {"x-ratelimit-limit": "60", "x-ratelimit-remaining": "0",
                        "x-ratelimit-reset": str(st.rate_limit_reset)})
            return
        body = st.releases.get(repo)
        if body is None:
            self._json(404, {"message": "Not Found"})
            return
        data = json.dumps(body).encode()
        etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
        if self.headers.get("If-None-Match") == etag:
            with st.lock:
                st.not_modified += 1
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("ETag", etag)
        self.send_header("x-ratelimit-remaining", "59")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _cdn(self, asset_id: int) -> None:
        st = self.server.state
        asset = st.assets.get(asset_id)
        if asset is None:
            self._json(404, {"message": "Not Found"})
            return
        with st.lock:
            st.downloads += 1
            fail, st.fail_next_download = st.fail_next_download, None
            cut, st.cut_after = st.cut_after, None
        rng = self.headers.get("Range")
        start = 0
        if rng:
            st.ranges_seen.append(rng)
            start = int(rng.split("=", 1)[1].split("-", 1)[0])
        if fail is not None:
            self._json(fail, {"message": "Internal Server Error"})
            return
        if start >= asset.size and start:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{asset.size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = asset.size - start
        self.send_response(206 if start else 200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if start:
            self.send_header("Content-Range", f"bytes {start}-{asset.size - 1}/{asset.size}")
        self.end_headers()
        sent = 0
        with open(asset.path, "rb") as fh:
            if cut is None and not st.block_delay:
                # Like a CDN, whose CPU is not ours: the kernel sends the file (a Python copy loop
                # here would compete with the client under test for the same cores).
                try:
                    sent = self.connection.sendfile(fh, start, length)
                except OSError:  # the client went away
                    self.close_connection = True
                with st.lock:
                    st.body_bytes_sent += sent
                return
            fh.seek(start)
            while True:
                want = 1 << 18
                if cut is not None:
                    want = min(want, cut - sent)
                    if want <= 0:
                        with st.lock:
                            st.body_bytes_sent += sent
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                block = fh.read(want)
                if not block:
                    break
                try:
                    self.wfile.write(block)
                except OSError:
                    break
                sent += len(block)
                if st.block_delay:
                    time.sleep(st.block_delay)
        with st.lock:
            st.body_bytes_sent += sent


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins handler threads: none outlive a test

    def __init__(self, state: ServerState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.base = f"http://127.0.0.1:{self.server_address[1]}"


class GitHubServer:
    """Handle on a running fake GitHub; add releases, set faults, read counters."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self.state = server.state
        self.base = server.base
        self.api_base = server.base + "/api"

    def add_release(self, repo: str, tag: str, files: list[Path], *, prerelease: bool = False,
                    digests: bool = True, wrong_digest_for: str | None = None,
                    published_at: str = "2026-02-10T08:10:00Z", name: str | None = None) -> list[ServedAsset]:
        """Publish ``files`` as the assets of ``repo``@``tag`` (newest release first), titled ``name``
        (default: the tag, as llama.cpp titles its releases)."""
        assets = []
        for f in files:
            data_sha = _sha256_file(f)
            aid = 1000 + len(self.state.assets)
            digest = f"sha256:{data_sha}" if digests else None
            if wrong_digest_for == f.name:
                digest = "sha256:" + hashlib.sha256(b"something else").hexdigest()
            a = ServedAsset(aid, repo, tag, f.name, f, f.stat().st_size, data_sha, digest)
            self.state.assets[aid] = a
            assets.append(a)
        release = {
            "url": f"{self.api_base}/repos/{repo}/releases/{tag}",
            "html_url": f"{self.base}/{repo}/releases/tag/{tag}",
            "tag_name": tag, "name": tag if name is None else name, "draft": False, "prerelease": prerelease,
            "published_at": published_at,
            "assets": [{
                "id": a.id, "name": a.name, "size": a.size, "digest": a.digest,
                "content_type": "application/octet-stream",
                "updated_at": published_at,
                "browser_download_url": f"{self.base}/{repo}/releases/download/{tag}/{a.name}",
            } for a in assets],
        }
        self.state.releases.setdefault(repo, []).insert(0, release)
        return assets


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@contextmanager
def github_server() -> Iterator[GitHubServer]:
    """Run the fake GitHub on a free loopback port until the block ends."""
    server = _Server(ServerState())
    thread = threading.Thread(target=server.serve_forever, name="github-server", kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield GitHubServer(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
