"""A hostile hub or mirror (issue 28): its names, its redirects, its silence. Real loopback servers.

The server below answers as the hub does (HEAD/GET ``/{repo}/resolve/{rev}/{file}``, the model
API) but every part a hub controls can be set by the test: ETag, X-Repo-Commit, sibling names,
a redirect to a "CDN" on another origin, a redirect loop, a bad ``Content-Encoding``, a server that
accepts and never answers, one that drips a byte now and then.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_gui.core.base.errors import HubError, NetworkError, describe
from strata_gui.core.models.downloads import DownloadJob, HubCacheDownloader
from strata_gui.core.models.hub import HubClient
from strata_gui.core.models.hub_files import RemoteFile
from strata_gui.core.net.transfer import Pace, same_origin

REPO = "org/model"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BODY = b"GGUF" + bytes(range(256)) * 64
SHA = hashlib.sha256(BODY).hexdigest()
TOKEN = "hf_secret_token_0123456789"


@dataclass
class Behaviour:
    etag: str = f'"{SHA}"'
    commit: str = COMMIT
    siblings: list[str] = field(default_factory=lambda: ["model-Q4_K_M.gguf"])
    redirect_to: str | None = None  # base URL of the "CDN" the file redirects to
    loop: bool = False  # the file redirects to itself, forever
    bad_encoding: bool = False  # the body claims gzip and is not
    silent: bool = False  # accept, read the request, never answer
    drip: float = 0.0  # seconds between single bytes of the answer
    gzip_bomb: bool = False  # the body is gzip (though "identity" was asked for) of 8 MiB of zeros
    claim_length: int | None = None  # ignore Range, claim this Content-Length, send a little, hang
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _wait(self, seconds: float) -> bool:
        return not self.server.b.stop.wait(seconds)

    def _answer(self, head: bool) -> None:
        b = self.server.b
        b.seen.append((self.command, self.path, dict(self.headers)))
        if b.silent:
            while self._wait(0.05):
                pass
            return
        path = self.path.split("?")[0]
        if path.startswith("/api/models/"):
            data = json.dumps({"id": REPO, "modelId": REPO, "sha": b.commit, "private": False, "gated": False,
                               "downloads": 1, "likes": 0, "tags": ["gguf"], "pipeline_tag": "text-generation",
                               "siblings": [{"rfilename": n, "size": len(BODY), "lfs": {"sha256": SHA, "size": len(BODY), "pointerSize": 134}}
                                            for n in b.siblings]}).encode()
            return self._send(200, data, {"Content-Type": "application/json"}, head)
        if path.startswith("/cdn/"):
            return self._send(200, BODY, {"Content-Type": "application/octet-stream"}, head)
        if b.loop:
            return self._send(302, b"", {"Location": self.path}, head)
        headers = {"ETag": b.etag, "X-Repo-Commit": b.commit, "Accept-Ranges": "bytes"}
        if b.redirect_to:
            headers.update({"Location": f"{b.redirect_to}/cdn/{SHA}", "X-Linked-Size": str(len(BODY)),
                            "X-Linked-Etag": b.etag})
            return self._send(302, b"", headers, head)
        if b.claim_length is not None and not head:
            self.send_response(200)
            self.send_header("Content-Length", str(b.claim_length))
            self.end_headers()
            self.wfile.write(BODY)
            self.wfile.flush()
            while self._wait(0.05):
                pass
            return
        if b.gzip_bomb:
            headers["Content-Encoding"] = "gzip"
            return self._send(200, gzip.compress(bytes(8 << 20)), headers, head)
        if b.bad_encoding:
            headers["Content-Encoding"] = "gzip"
            return self._send(200, b"this is not gzip at all" * 50, headers, head)
        return self._send(200, BODY, headers, head)

    def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        b = self.server.b
        if b.drip:
            # Status line, headers and body one byte at a time, each within any read time-out.
            raw = f"HTTP/1.1 {status} OK\r\nContent-Length: {len(body)}\r\n".encode()
            raw += b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items()) + b"\r\n" + (b"" if head else body)
            for i in range(len(raw)):
                if not self._wait(b.drip):
                    return
                try:
                    self.wfile.write(raw[i:i + 1])
                    self.wfile.flush()
                except OSError:
                    return
            return
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer(False)

    def do_HEAD(self) -> None:
        self._answer(True)


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, b: Behaviour, host: str) -> None:
        super().__init__((host, 0), _Handler)
        self.b = b


@contextmanager
def serve(b: Behaviour, host: str = "127.0.0.1") -> Iterator[str]:
    server = _Server(b, host)
    thread = threading.Thread(target=server.serve_forever, name="hostile-hub", kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        b.stop.set()  # silent and dripping handlers give up; server_close joins them
        server.shutdown()
        server.server_close()
        thread.join()


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _layout(tmp_path: Path) -> tuple[Path, set[str]]:
    cache = tmp_path / "home" / "hub"
    cache.mkdir(parents=True)
    (tmp_path / "victim.txt").write_text("keep me")
    return cache, _tree(tmp_path)


def _outside(tmp_path: Path, before: set[str]) -> set[str]:
    return {p for p in _tree(tmp_path) - before if not p.startswith("home/hub")}


def _job(path: str = "model-Q4_K_M.gguf", sha: str | None = SHA, ref: str = "main") -> DownloadJob:
    return DownloadJob(REPO, COMMIT, "Q4_K_M", path, [RemoteFile(path, len(BODY), sha)], ref=ref)


def _download(endpoint: str, cache: Path, job: DownloadJob, **kw: Any) -> list[Path]:
    async def go() -> list[Path]:
        async with httpx.AsyncClient(follow_redirects=True, timeout=httpx.Timeout(30.0, read=60.0)) as client:
            dl = HubCacheDownloader(client, cache, endpoint, lambda: {"Authorization": f"Bearer {TOKEN}"},
                                    disk_free=lambda _p: 1 << 40, **kw)
            return await dl.download(job, lambda _p: None)

    return asyncio.run(go())


def _detail(endpoint: str, **kw: Any) -> Any:
    async def go() -> Any:
        async with httpx.AsyncClient(follow_redirects=True, timeout=httpx.Timeout(30.0, read=60.0)) as client:
            return await HubClient(client, endpoint, lambda: TOKEN, **kw).detail(REPO)

    return asyncio.run(go())


# -- names ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../victim.txt", "/etc/passwd", "a/../../b.gguf", "C:/x.gguf",
                                  "..\\x.gguf", "a\x00.gguf", "./a.gguf", "a//b.gguf"])
def test_sibling_names_that_leave_the_repo_are_refused(name: str) -> None:
    b = Behaviour(siblings=["model-Q4_K_M.gguf", name])
    with serve(b) as endpoint, pytest.raises(HubError, match="unsafe file name") as info:
        _detail(endpoint)
    assert info.value.hint and "hub endpoint" in info.value.hint


def test_a_hostile_commit_in_the_model_info_is_refused() -> None:
    with serve(Behaviour(commit="../../../../tmp/x")) as endpoint, pytest.raises(HubError, match="unsafe commit"):
        _detail(endpoint)


def test_a_queued_file_name_with_dotdot_touches_nothing(tmp_path: Path) -> None:
    # A queue file (or a starter) carrying ``../``: refused before the first request.
    cache, before = _layout(tmp_path)
    b = Behaviour()
    with serve(b) as endpoint, pytest.raises(HubError, match="unsafe file name"):
        _download(endpoint, cache, _job("../../../victim.txt"))
    assert b.seen == [] and _outside(tmp_path, before) == set()
    assert (tmp_path / "victim.txt").read_text() == "keep me" and not (tmp_path / "victim.txt").is_symlink()


@pytest.mark.parametrize(("field_name", "value", "needle"), [
    ("etag", '"../../../victim.txt"', "unsafe ETag"),
    ("etag", '"..\\\\x"', "unsafe ETag"),
    ("commit", "../../../../elsewhere", "unsafe commit"),
    ("commit", "main", "unsafe commit"),
])
def test_hostile_etag_or_commit_writes_nothing(tmp_path: Path, field_name: str, value: str, needle: str) -> None:
    cache, before = _layout(tmp_path)
    b = Behaviour(**{field_name: value})
    with serve(b) as endpoint, pytest.raises(HubError, match=needle):
        _download(endpoint, cache, _job(sha=None))
    assert _outside(tmp_path, before) == set()
    assert _tree(cache) == set()  # refused before the first byte was written anywhere
    assert (tmp_path / "victim.txt").read_text() == "keep me"


def test_a_branch_name_with_dotdot_is_refused(tmp_path: Path) -> None:
    cache, before = _layout(tmp_path)
    with serve(Behaviour()) as endpoint, pytest.raises(HubError, match="unsafe branch name"):
        _download(endpoint, cache, _job(ref="../../../victim.txt"))
    assert _outside(tmp_path, before) == set()


# -- credentials ------------------------------------------------------------------------------
def test_origin_rule() -> None:
    assert same_origin("https://huggingface.co/a", "https://huggingface.co:443/b")
    assert not same_origin("http://127.0.0.1:8000/a", "http://127.0.0.1:8001/a")  # another port
    assert not same_origin("http://127.0.0.1:8000/a", "http://localhost:8000/a")  # another host
    assert not same_origin("http://h/a", "https://h/a")  # another scheme


@pytest.mark.parametrize("cdn_host", ["127.0.0.1", "localhost"])
def test_token_is_not_sent_to_the_cdn_a_file_redirects_to(tmp_path: Path, cdn_host: str) -> None:
    cache, _ = _layout(tmp_path)
    cdn = Behaviour()
    with serve(cdn, cdn_host) as cdn_url:
        hub = Behaviour(redirect_to=cdn_url)
        with serve(hub) as endpoint:
            paths = _download(endpoint, cache, _job())
    assert paths[0].read_bytes() == BODY
    assert hub.seen and all(h.get("Authorization") == f"Bearer {TOKEN}" for _m, _p, h in hub.seen)
    assert cdn.seen, "the download went to the CDN"
    assert all("Authorization" not in h and "authorization" not in h for _m, _p, h in cdn.seen), cdn.seen


# -- silence, drips, loops, bad bodies --------------------------------------------------------
def test_model_info_from_a_hub_that_never_answers_gives_up() -> None:
    with serve(Behaviour(silent=True)) as endpoint, pytest.raises(HubError, match="did not answer in time") as info:
        _detail(endpoint, deadline=0.5)
    assert info.value.hint


def test_model_info_from_a_dripping_hub_gives_up() -> None:
    with serve(Behaviour(drip=0.1)) as endpoint, pytest.raises(HubError, match="did not answer in time"):
        _detail(endpoint, deadline=0.5)


def test_a_dripping_download_is_given_up_and_can_resume(tmp_path: Path) -> None:
    cache, before = _layout(tmp_path)
    hub = Behaviour()
    with serve(Behaviour(drip=0.05)) as cdn_url:
        hub.redirect_to = cdn_url
        with serve(hub) as endpoint, pytest.raises(HubError) as info:
            _download(endpoint, cache, _job(), pace=Pace(min_rate=10_000, window=0.5))
    assert "did not answer in time" in info.value.message or "stopped at" in info.value.message
    assert info.value.hint
    assert _outside(tmp_path, before) == set()


def test_a_redirect_loop_is_explained(tmp_path: Path) -> None:
    cache, _ = _layout(tmp_path)
    with serve(Behaviour(loop=True)) as endpoint, pytest.raises(HubError, match="loop of redirects") as info:
        _download(endpoint, cache, _job())
    assert info.value.hint


def test_a_body_in_a_bad_encoding_is_explained(tmp_path: Path) -> None:
    cache, _ = _layout(tmp_path)
    with serve(Behaviour(bad_encoding=True)) as endpoint, pytest.raises(HubError) as info:
        _download(endpoint, cache, _job())
    assert "could not decode" in info.value.message or "stopped at" in info.value.message
    assert info.value.hint


def test_raw_httpx_failures_become_network_errors_at_the_edge() -> None:
    request = httpx.Request("GET", "http://127.0.0.1:1/x")
    for exc, needle in [(httpx.TooManyRedirects("x", request=request), "loop of redirects"),
                        (httpx.DecodingError("x", request=request), "could not decode"),
                        (httpx.ReadTimeout("x", request=request), "did not answer in time"),
                        (httpx.InvalidURL("x"), "address it cannot use"),
                        (httpx.ConnectError("x", request=request), "network request failed")]:
        err = describe(exc)
        assert isinstance(err, NetworkError) and needle in err.message and err.hint, (exc, err)
    assert type(describe(KeyError("bug"))).__name__ == "InternalError"


def test_silent_server_leaves_no_thread_behind() -> None:
    with serve(Behaviour(silent=True)) as endpoint, pytest.raises(HubError):
        _detail(endpoint, deadline=0.3)
    assert not [t for t in threading.enumerate() if t.name == "hostile-hub"]


def test_a_header_read_from_a_server_ignoring_range_does_not_read_a_whole_model() -> None:
    async def go(endpoint: str) -> Any:
        async with httpx.AsyncClient(follow_redirects=True, timeout=httpx.Timeout(30.0, read=60.0)) as client:
            return await HubClient(client, endpoint, lambda: TOKEN).header(REPO, COMMIT, "model-Q4_K_M.gguf")

    with serve(Behaviour(claim_length=100 << 30)) as endpoint, pytest.raises(HubError, match="did not send the part"):
        asyncio.run(go(endpoint))


# -- the CLI's edge: a message and a hint, never a traceback ----------------------------------
def _cli(endpoint: str, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from strata_gui.cli import main
    from strata_gui.core.config.services import build_services

    build_services().settings_service.update(hub_endpoint=endpoint)  # saved, as the Settings page does
    capsys.readouterr()
    rc = main(list(argv))
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(("behaviour", "needle"), [
    (Behaviour(siblings=["../../../victim-Q4_K_M.gguf"]), "unsafe file name"),
    (Behaviour(loop=True), "loop of redirects"),
    (Behaviour(bad_encoding=True), "decode"),
    (Behaviour(etag='"../../../victim.txt"'), "unsafe ETag"),
])
def test_models_pull_from_a_hostile_hub_fails_with_a_message_and_a_hint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], behaviour: Behaviour, needle: str) -> None:
    (tmp_path / "victim.txt").write_text("keep me")
    with serve(behaviour) as endpoint:
        rc, err = _cli(endpoint, capsys, "models", "pull", REPO, "Q4_K_M")
    assert rc == 1
    assert "\nerror: " in "\n" + err and needle in err and "\nhint: " in err, err
    assert "Traceback" not in err and "Internal error" not in err, err
    assert (tmp_path / "victim.txt").read_text() == "keep me" and not (tmp_path / "victim.txt").is_symlink()


def test_a_compressed_body_cannot_unpack_past_the_file_size(tmp_path: Path) -> None:
    cache, before = _layout(tmp_path)
    with serve(Behaviour(gzip_bomb=True)) as endpoint, pytest.raises(HubError) as info:
        _download(endpoint, cache, _job(sha=None))
    assert info.value.hint
    sizes = [p.stat().st_size for p in cache.rglob("*") if p.is_file()]
    assert max(sizes, default=0) < 1 << 20, sizes  # never the 8 MiB the body unpacks to
    assert _outside(tmp_path, before) == set()
