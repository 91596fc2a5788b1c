"""The shipped catalog and plans for real-world release asset names (captured listings)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.base.errors import EngineCatalogError
from strata_gui.core.engines import GpuTarget, load_catalog, parse_catalog, plan_engines
from strata_gui.core.engines.plan import ranked_releases, release_version
from strata_gui.core.engines.releases import load_releases_file, parse_releases

DATA = Path(__file__).parents[1] / "data" / "engines"


@pytest.fixture(scope="module")
def catalog_raw() -> dict[str, Any]:
    from strata_gui.core.config.resources import kernels_dir

    return json.loads((kernels_dir() / "catalog.json").read_text())


@pytest.fixture(scope="module")
def releases() -> dict[str, Any]:
    out = {}
    for f in sorted(DATA.glob("releases-*.json")):
        repo, rels = load_releases_file(f)
        out[repo] = rels
    return out


def test_shipped_catalog_loads_and_maps_families() -> None:
    cat = load_catalog()
    assert cat.family_of("gfx1103") == "gfx110X"
    assert cat.family_of("GFX1201") == "gfx120X"
    assert cat.family_of("gfx1034") == "gfx103X"
    assert cat.family_of("gfx1151") == "gfx1151"
    assert cat.family_of("gfx1036") is None
    assert cat.family("gfx1151") is not None
    assert cat.family("gfx1151").env_for("windows") == {"OCL_SET_SVM_SIZE": "262144"}  # type: ignore[union-attr]
    assert cat.family("gfx1151").env_for("linux") == {}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda c: c.update(schema_version=99), "schema_version"),
        (lambda c: c["families"]["gfx110X"].update(targets=["gfx11"]), "families.gfx110X.targets"),
        (lambda c: c["families"]["gfx120X"]["targets"].append("gfx1100"), "already in family"),
        (lambda c: c["sources"][0]["assets"][0].update(pattern="llama-(?P<tag>b\\d+"), "not a valid regular"),
        (lambda c: c["sources"][0]["assets"][0].update(backend="cuda"), "unknown backend"),
        (lambda c: c["sources"][1]["assets"][3].update(pattern="^llama-b\\d+-bin-win-vulkan-x64\\.zip$"), "(?P<tag>"),
        (lambda c: c["sources"][0]["assets"][0].update(required=[]), "required"),
        (lambda c: c["sources"][0].update(pinned_sha256={"x.zip": "abc"}), "pinned_sha256"),
        (lambda c: c.update(backend_order=["rocm", "cpu"]), "backend_order"),
        (lambda c: c.update(sources="nope"), "sources: must be a list"),
    ],
)
def test_catalog_validation_names_the_field(catalog_raw: dict[str, Any], mutate: Any, needle: str) -> None:
    raw = copy.deepcopy(catalog_raw)
    mutate(raw)
    with pytest.raises(EngineCatalogError) as info:
        parse_catalog(raw, origin="test.json")
    assert needle in info.value.message
    assert info.value.hint


def test_unreadable_catalog_file(tmp_path: Path) -> None:
    bad = tmp_path / "catalog.json"
    bad.write_text("{ not json")
    with pytest.raises(EngineCatalogError, match="not valid JSON"):
        load_catalog(bad)
    with pytest.raises(EngineCatalogError, match="could not be read"):
        load_catalog(tmp_path / "missing.json")


# (gfx, os) -> expected ROCm asset names tried, in order (empty: falls back to Vulkan).
EXPECTED_ROCM = {
    ("gfx1030", "windows"): ["llama-b1011-windows-rocm-gfx103X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1031", "windows"): ["llama-b1011-windows-rocm-gfx103X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1032", "windows"): ["llama-b1011-windows-rocm-gfx103X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1100", "windows"): ["llama-b1011-windows-rocm-gfx110X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1101", "windows"): ["llama-b1011-windows-rocm-gfx110X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1102", "windows"): ["llama-b1011-windows-rocm-gfx110X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1103", "windows"): ["llama-b1011-windows-rocm-gfx110X-x64.zip"],
    ("gfx1150", "windows"): ["llama-b1011-windows-rocm-gfx1150-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1151", "windows"): ["llama-b1011-windows-rocm-gfx1151-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1200", "windows"): ["llama-b1011-windows-rocm-gfx120X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1201", "windows"): ["llama-b1011-windows-rocm-gfx120X-x64.zip", "llama-b7601-bin-win-rocm-7.2-x64.zip"],
    ("gfx1030", "linux"): ["llama-b1011-ubuntu-rocm-gfx103X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1031", "linux"): ["llama-b1011-ubuntu-rocm-gfx103X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1032", "linux"): ["llama-b1011-ubuntu-rocm-gfx103X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1100", "linux"): ["llama-b1011-ubuntu-rocm-gfx110X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1101", "linux"): ["llama-b1011-ubuntu-rocm-gfx110X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1102", "linux"): ["llama-b1011-ubuntu-rocm-gfx110X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1103", "linux"): ["llama-b1011-ubuntu-rocm-gfx110X-x64.zip"],
    ("gfx1150", "linux"): ["llama-b1011-ubuntu-rocm-gfx1150-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1151", "linux"): ["llama-b1011-ubuntu-rocm-gfx1151-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1200", "linux"): ["llama-b1011-ubuntu-rocm-gfx120X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
    ("gfx1201", "linux"): ["llama-b1011-ubuntu-rocm-gfx120X-x64.zip", "llama-b7601-bin-ubuntu-rocm-7.2-x64.tar.gz"],
}
TAIL = {
    "windows": ["llama-b7601-bin-win-vulkan-x64.zip", "llama-b7601-bin-win-cpu-x64.zip"],
    "linux": ["llama-b7601-bin-ubuntu-vulkan-x64.tar.gz", "llama-b7601-bin-ubuntu-x64.tar.gz"],
}


@pytest.mark.parametrize(("gfx", "os_name"), sorted(EXPECTED_ROCM))
def test_plan_real_asset_names(gfx: str, os_name: str, releases: dict[str, Any]) -> None:
    plan = plan_engines(load_catalog(), [GpuTarget("GPU", 0x744C, gfx)], os_name, releases)
    names = [c.asset.name for c in plan.included if c.asset]
    assert names == EXPECTED_ROCM[(gfx, os_name)] + TAIL[os_name]
    first = plan.included[0]
    assert first.backend == "rocm"
    fam = load_catalog().family_of(gfx)
    assert f"{gfx} → family {fam}" in first.reason
    assert gfx in first.gfx_targets
    # the newest non-prerelease lemonade tag wins (b1012 is a prerelease)
    assert first.tag == "b1011"


@pytest.mark.parametrize("os_name", ["windows", "linux"])
def test_plan_unknown_device_and_unlisted_target(os_name: str, releases: dict[str, Any]) -> None:
    cat = load_catalog()
    plan = plan_engines(cat, [GpuTarget("AMD Radeon (new)", 0x7599, None)], os_name, releases)
    assert [c.backend for c in plan.included] == ["vulkan", "cpu"]
    out = [c for c in plan.candidates if not c.included]
    assert out[0].reason == "unknown device 0x7599: not in table → Vulkan; ROCm will be probed if you install it"

    plan = plan_engines(cat, [GpuTarget("Radeon 610M", 0x164E, "gfx1036")], os_name, releases)
    assert [c.backend for c in plan.included] == ["vulkan", "cpu"]
    assert "gfx1036: no ROCm build for this target → Vulkan" in plan.report()


def test_plan_without_gpu_and_without_listings(releases: dict[str, Any]) -> None:
    plan = plan_engines(load_catalog(), [], "linux", releases)
    assert [c.backend for c in plan.included] == ["cpu"]
    empty = plan_engines(load_catalog(), [GpuTarget("x", None, "gfx1100")], "linux", {})
    assert empty.included == []
    assert empty.notes and "releases-json" in empty.notes[0]


def test_pinned_tag_and_old_layouts(catalog_raw: dict[str, Any], releases: dict[str, Any]) -> None:
    raw = copy.deepcopy(catalog_raw)
    raw["sources"][1]["pinned_tag"] = "b5500"
    raw["sources"][1]["min_tag"] = None
    cat = parse_catalog(raw)
    plan = plan_engines(cat, [GpuTarget("7900 XTX", 0x744C, "gfx1100")], "windows", releases)
    names = [c.asset.name for c in plan.included if c.asset]
    # per-target asset of 2025 and the old flat ubuntu zip names still match
    assert "llama-b5500-bin-win-hip-x64-gfx1100.zip" in names
    assert plan.to_json()["candidates"][0]["engine_id"] == "lemonade-rocm-gfx110X-b1011"
    linux = plan_engines(cat, [GpuTarget("7900 XTX", 0x744C, "gfx1100")], "linux", releases)
    assert [c.asset.name for c in linux.included if c.backend != "rocm" and c.asset] == [
        "llama-b5500-bin-ubuntu-vulkan-x64.zip", "llama-b5500-bin-ubuntu-x64.zip"]


def test_releases_rank_by_the_build_they_name_not_their_tag() -> None:
    """The saved llama.cpp listing, plus a release moved to a higher tag (its title still names the
    old build it holds) and one whose tag and title carry no build number: the plan takes the newest
    build, b7601, not the highest tag."""
    data = json.loads((DATA / "releases-ggml-org-llama.cpp.json").read_text())
    moved = copy.deepcopy(next(r for r in data if r["tag_name"] == "b7000"))
    moved.update(tag_name="b9001", name="b7000", published_at="2026-03-01T10:00:00Z")
    nightly = copy.deepcopy(next(r for r in data if r["tag_name"] == "b5500"))
    nightly.update(tag_name="nightly", name="Nightly build", published_at="2026-03-02T10:00:00Z")
    rels = parse_releases([moved, nightly, *data], "ggml-org/llama.cpp")
    plan = plan_engines(load_catalog(), [], "windows", {"ggml-org/llama.cpp": rels})
    assert [c.tag for c in plan.included] == ["b7601"]
    assert [release_version(r) for r in ranked_releases(rels)] == ["b7601", "b7000", "b7000", "b5500", "nightly"]
    # Without a number, the publish date orders them.
    older = copy.deepcopy(nightly)
    older.update(tag_name="nightly-old", published_at="2026-01-01T10:00:00Z")
    dated = ranked_releases(parse_releases([older, nightly], "ggml-org/llama.cpp"))
    assert [r.tag for r in dated] == ["nightly", "nightly-old"]
