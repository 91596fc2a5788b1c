"""The PCI-ID → gfx table: revision overrides, unknown devices, validation, KFD version names."""

from __future__ import annotations

import json

import pytest

from strata_gui.core.base.errors import GpuDetectionError
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.ids import GpuIdTable, gfx_from_target_version, load_gpu_table, normalise_gfx


@pytest.mark.parametrize(("device", "revision", "gfx", "name"), [
    (0x744C, 0xC8, "gfx1100", "Radeon RX 7900 XTX"),
    (0x744C, 0xCC, "gfx1100", "Radeon RX 7900 XT"),
    (0x744C, 0xCE, "gfx1100", "Radeon RX 7900 GRE"),
    (0x744C, 0x00, "gfx1100", "Radeon RX 7900 series"),
    (0x73FF, 0xC7, "gfx1032", "Radeon RX 6600 XT / 6600"),
    (0x73FF, 0xDF, "gfx1031", "Radeon RX 6750 GRE 10GB"),  # same id, other chip
    (0x7550, 0xC0, "gfx1201", "Radeon RX 9070 XT"),
    (0x1586, 0xC1, "gfx1151", "Radeon 8060S"),  # libdrm's amdgpu.ids names the product by revision
    (0x1586, 0xC2, "gfx1151", "Radeon 8050S"),
    (0x1586, 0xE9, "gfx1151", "Radeon 8060S / 8050S (Strix Halo)"),  # a revision it does not list
    (0x15BF, None, "gfx1103", "Radeon 780M"),
    # Rows added for issue 13, each with its source in the table.
    (0x74A1, 0x00, "gfx942", "Instinct MI300X"),
    (0x740F, 0x02, "gfx90a", "Instinct MI210"),
    (0x738C, 0x01, "gfx908", "Instinct MI100"),
    (0x7499, 0xC0, "gfx1102", "Radeon Pro W7400 / RX 7400 / RX 7300"),
    (0x73E3, 0x00, "gfx1032", "Radeon Pro W6600"),
    (0x1114, 0xC2, "gfx1152", "Radeon 860M / 840M"),
    (0x150E, 0xC1, "gfx1150", "Radeon 890M / 880M (Strix Point)"),
])
def test_lookup_honours_revisions(gpu_table: GpuIdTable, device: int, revision: int | None, gfx: str,
                                  name: str) -> None:
    match = gpu_table.lookup(device, revision)
    assert match is not None
    assert (match.gfx, match.name) == (gfx, name)


def test_every_row_names_its_source(tmp_path) -> None:
    data = json.loads((kernels_dir() / "amd-gpu-ids.json").read_text())
    assert all(row.get("source") for row in data["devices"])
    del data["devices"][3]["source"]
    (tmp_path / "amd-gpu-ids.json").write_text(json.dumps(data))
    with pytest.raises(GpuDetectionError, match=r"devices\[3\]: missing source"):
        load_gpu_table(tmp_path)


def test_integrated_parts_are_flagged(gpu_table: GpuIdTable) -> None:
    flags = {d: gpu_table.lookup(d, None).integrated for d in (0x1586, 0x15BF, 0x150E, 0x164E, 0x744C, 0x7480)}
    assert flags == {0x1586: True, 0x15BF: True, 0x150E: True, 0x164E: True, 0x744C: False, 0x7480: False}


def test_unknown_device_is_none_and_vendors_are_named(gpu_table: GpuIdTable) -> None:
    assert gpu_table.lookup(0x7599, 0xC0) is None
    assert gpu_table.vendor_name(0x10DE) == "NVIDIA"
    assert gpu_table.vendor_name(0x8086) == "Intel"
    assert gpu_table.vendor_name(0xABCD) == "vendor 0xabcd"


@pytest.mark.parametrize(("version", "gfx"), [
    (110000, "gfx1100"), (110501, "gfx1151"), (110003, "gfx1103"), (120001, "gfx1201"),
    (100302, "gfx1032"), (100306, "gfx1036"), (90010, "gfx90a"), (90008, "gfx908"), (0, None),
])
def test_kfd_target_version_to_gfx(version: int, gfx: str | None) -> None:
    assert gfx_from_target_version(version) == gfx


def test_normalise_gfx_drops_feature_flags() -> None:
    assert normalise_gfx("gfx1151:sramecc-:xnack-") == "gfx1151"
    assert normalise_gfx("amdgcn") is None


def _write_table(tmp_path, mutate) -> None:
    data = json.loads((kernels_dir() / "amd-gpu-ids.json").read_text())
    mutate(data)
    (tmp_path / "amd-gpu-ids.json").write_text(json.dumps(data))


@pytest.mark.parametrize(("mutate", "fragment"), [
    (lambda d: d["devices"][0].update(gfx="navi31"), "devices[0]: expected a gfx target"),
    (lambda d: d["devices"].append(dict(d["devices"][0])), "listed twice"),
    (lambda d: d["devices"][0].update(id="744C"), "expected a hex string"),
    (lambda d: d["windows_driver"].update(min_version="latest"), "not a version"),
    (lambda d: d.update(schema=2), "schema"),
])
def test_invalid_table_names_the_problem(tmp_path, mutate, fragment: str) -> None:
    _write_table(tmp_path, mutate)
    with pytest.raises(GpuDetectionError) as info:
        load_gpu_table(tmp_path)
    assert fragment in info.value.message
    assert info.value.hint


def test_missing_or_broken_table_is_a_gpu_detection_error(tmp_path) -> None:
    with pytest.raises(GpuDetectionError, match="Could not read"):
        load_gpu_table(tmp_path)
    (tmp_path / "amd-gpu-ids.json").write_text("{not json")
    with pytest.raises(GpuDetectionError, match="not valid JSON"):
        load_gpu_table(tmp_path)
