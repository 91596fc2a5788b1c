"""GitHub Releases client: listings with ETag caching, rate limits and an offline fallback."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.base.errors import EngineDownloadError, RateLimitedError
from strata_gui.core.base.state_file import load_cache
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.engines.records import Release, ReleaseAsset, ReleaseListing

log = logging.getLogger(__name__)


def parse_releases(data: Any, repo: str) -> tuple[Release, ...]:
    """Turn GitHub's release JSON (a list, or one release object) into records.

    Raises:
        ValueError: when the JSON is not release data.
    """
    items = data if isinstance(data, list) else [data]
    out: list[Release] = []
    for item in items:
        if not isinstance(item, dict) or "tag_name" not in item:
            raise ValueError("not a GitHub release object (no tag_name)")
        assets = []
        for a in item.get("assets") or []:
            if not isinstance(a, dict):
                continue
            assets.append(ReleaseAsset(
                name=str(a.get("name", "")),
                size=int(a.get("size") or 0),
                download_url=str(a.get("browser_download_url", "")),
                digest=a.get("digest") if isinstance(a.get("digest"), str) else None,
            ))
        out.append(Release(
            repo=repo, tag=str(item["tag_name"]), published_at=str(item.get("published_at") or ""),
            prerelease=bool(item.get("prerelease")), assets=tuple(assets), draft=bool(item.get("draft")),
            name=str(item.get("name") or ""),
        ))
    return tuple(out)


def load_releases_file(path: Path) -> tuple[str, tuple[Release, ...]]:
    """Read saved release JSON (``gh api`` output). The repository is taken from the asset URLs.

    Returns:
        (repo, releases)
    """
    from strata_gui.core.base.errors import EngineCatalogError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EngineCatalogError(T(QT_TRANSLATE_NOOP("Core", "Could not read release JSON {path}: {error}"),
                                   path=str(path), error=str(exc))) from exc
    repo = _repo_from_json(data)
    if repo is None:
        raise EngineCatalogError(T(QT_TRANSLATE_NOOP("Core", "{path} does not look like GitHub release JSON (no asset "
                                                             "URLs)."), path=str(path)),
                                 hint=QT_TRANSLATE_NOOP("Core", "Save the output of GET /repos/OWNER/NAME/releases."))
    try:
        return repo, parse_releases(data, repo)
    except ValueError as exc:
        raise EngineCatalogError(f"{path}: {exc}") from exc


def _repo_from_json(data: Any) -> str | None:
    items = data if isinstance(data, list) else [data]
    for item in items:
        if not isinstance(item, dict):
            continue
        for key in ("html_url", "url"):
            url = str(item.get(key, ""))
            if "/repos/" in url:
                parts = url.split("/repos/", 1)[1].split("/")
                if len(parts) >= 2:
                    return f"{parts[0]}/{parts[1]}"
            if "/releases" in url and url.count("/") >= 5:
                parts = url.split("://", 1)[-1].split("/")
                return f"{parts[1]}/{parts[2]}"
        for a in item.get("assets") or []:
            url = str(a.get("browser_download_url", "")) if isinstance(a, dict) else ""
            if "/releases/download/" in url:
                parts = url.split("/releases/download/", 1)[0].split("/")
                return f"{parts[-2]}/{parts[-1]}"
    return None


class ReleaseClient:
    """Reads release listings from the GitHub API (or a mirror).

    Args:
        http: The shared async HTTP client (follows redirects).
        cache_dir: Where listings and their ETags are kept between runs.
        api_base: API root, e.g. ``https://api.github.com`` (Settings.github_api_url).
        download_base: When set, asset URLs of ``https://github.com/...`` are rewritten onto it
            (Settings.github_download_url), for mirrors.
        offline: Never touch the network; answer from the cache.
        clock: Wall clock (epoch seconds).
    """

    GITHUB_WEB = "https://github.com"

    def __init__(self, http: httpx.AsyncClient, cache_dir: Path, *, api_base: str, download_base: str = "",
                 offline: bool = False, clock: Callable[[], float] = time.time) -> None:
        self._http = http
        self._cache_dir = cache_dir
        self.api_base = api_base.rstrip("/")
        self.download_base = download_base.rstrip("/")
        self.offline = offline
        self._clock = clock

    def _cache_file(self, repo: str) -> Path:
        return self._cache_dir / f"{repo.replace('/', '__')}.json"

    def _read_cache(self, repo: str) -> dict[str, Any] | None:
        data = load_cache(self._cache_file(repo), dict)
        return data if data is not None and "data" in data else None

    def _write_cache(self, repo: str, etag: str | None, data: Any) -> None:
        path = self._cache_file(repo)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps({"etag": etag, "fetched_at": self._clock(), "data": data}), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            log.warning("could not cache release listing of %s: %s", repo, exc)

    def rewrite_url(self, url: str) -> str:
        """Apply the configured download mirror to an asset URL."""
        if self.download_base and url.startswith(self.GITHUB_WEB + "/"):
            return self.download_base + url[len(self.GITHUB_WEB):]
        return url

    def _from_cache(self, repo: str, why: str) -> ReleaseListing:
        cached = self._read_cache(repo)
        if cached is None:
            raise EngineDownloadError(
                T(QT_TRANSLATE_NOOP("Core", "Could not list the releases of {repo}: {reason}"), repo=repo, reason=why),
                hint=QT_TRANSLATE_NOOP("Core", "Connect to the internet (or turn off offline mode) once; the listing "
                                               "is then cached."),
            )
        fetched = float(cached.get("fetched_at", 0.0))
        when = datetime.fromtimestamp(fetched).strftime("%Y-%m-%d %H:%M") if fetched else "an earlier run"
        return ReleaseListing(repo, self._parse(cached["data"], repo), cached=True, fetched_at=fetched,
                              notice=f"{repo}: {why}; showing the listing saved {when}")

    def _parse(self, data: Any, repo: str) -> tuple[Release, ...]:
        try:
            releases = parse_releases(data, repo)
        except ValueError as exc:
            raise EngineDownloadError(T(QT_TRANSLATE_NOOP("Core", "{repo}: the release listing is not understood "
                                                                  "({error})."), repo=repo, error=str(exc))) from exc
        return tuple(
            Release(r.repo, r.tag, r.published_at, r.prerelease,
                    tuple(ReleaseAsset(a.name, a.size, self.rewrite_url(a.download_url), a.digest) for a in r.assets),
                    r.draft, r.name)
            for r in releases
        )

    async def list_releases(self, repo: str, per_page: int = 30) -> ReleaseListing:
        """The newest releases of ``owner/name``; from the cache when offline or unreachable."""
        if self.offline:
            return self._from_cache(repo, QT_TRANSLATE_NOOP("Core", "offline mode is on"))
        cached = self._read_cache(repo)
        headers = {"Accept": "application/vnd.github+json"}
        if cached and cached.get("etag"):
            headers["If-None-Match"] = str(cached["etag"])
        url = f"{self.api_base}/repos/{repo}/releases"
        try:
            resp = await self._http.get(url, params={"per_page": per_page}, headers=headers)
        except httpx.RequestError as exc:  # also a redirect loop or a body in a bad encoding
            log.info("release listing of %s failed: %r", repo, exc)
            return self._from_cache(repo, T(QT_TRANSLATE_NOOP("Core", "could not reach {host}"),
                                            host=httpx.URL(url).host))
        if resp.status_code == 304 and cached is not None:
            self._write_cache(repo, cached.get("etag"), cached["data"])
            return ReleaseListing(repo, self._parse(cached["data"], repo), cached=False, fetched_at=self._clock())
        if resp.status_code in (403, 429) and (
            resp.headers.get("x-ratelimit-remaining") == "0" or resp.status_code == 429
        ):
            raise self._rate_limited(resp, repo)
        if resp.status_code != 200:
            raise EngineDownloadError(
                T(QT_TRANSLATE_NOOP("Core", "GitHub answered {status} for the releases of {repo}."),
                  status=resp.status_code, repo=repo),
                hint=QT_TRANSLATE_NOOP("Core", "Check the API address in Settings, or try again later."),
                details=resp.text[:2000],
            )
        try:
            data = resp.json()
        except ValueError as exc:
            raise EngineDownloadError(T(QT_TRANSLATE_NOOP("Core", "{repo}: the release listing is not JSON."), repo=repo),
                                      details=resp.text[:2000]) from exc
        releases = self._parse(data, repo)
        self._write_cache(repo, resp.headers.get("etag"), data)
        return ReleaseListing(repo, releases, cached=False, fetched_at=self._clock())

    def _rate_limited(self, resp: httpx.Response, repo: str) -> RateLimitedError:
        reset_raw = resp.headers.get("x-ratelimit-reset")
        retry_after = resp.headers.get("retry-after")
        when: float | None = None
        if reset_raw and reset_raw.isdigit():
            when = float(reset_raw)
        elif retry_after and retry_after.isdigit():
            when = self._clock() + float(retry_after)
        if when is not None:
            hhmm = datetime.fromtimestamp(when).strftime("%H:%M")
            msg: str = T(QT_TRANSLATE_NOOP("Core", "GitHub's request limit is used up; try again after {time}."),
                         time=hhmm)
        else:
            msg = QT_TRANSLATE_NOOP("Core", "GitHub's request limit is used up; try again in an hour.")
        return RateLimitedError(msg, hint=QT_TRANSLATE_NOOP("Core", "Unauthenticated clients get 60 requests per hour. "
                                                                    "Cached listings are still used when offline mode "
                                                                    "is on."),
                                details=f"{repo}: HTTP {resp.status_code}")
