"""Archive safety, tuning-table checks, the launch environment and the probe parser."""

from __future__ import annotations

import asyncio
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from strata_gui.core.base.errors import EngineInstallError, TuningTableError, UnsafeArchiveError
from strata_gui.core.config.settings import Settings
from strata_gui.core.engines import GpuTarget, InstalledEngine, launch_environment, validate_tuning_table
from strata_gui.core.engines.archive import safe_extract
from strata_gui.core.engines.probe import ProcessRun, judge, parse_list_devices, probe_engine
from strata_gui.core.engines.records import TuningRef
from strata_gui.core.engines.tuning import check_tuning_table
from tests.engines.conftest import UPSTREAM, Harness, _tar_add, _tar_link, _zip_add, _zip_symlink
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer


def _tgz(path: Path, build: object) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        build(tf)  # type: ignore[operator]
    return path


@pytest.mark.parametrize(
    ("kind", "build", "needle"),
    [
        ("tar", lambda tf: _tar_add(tf, "llama/../../evil.sh", b"x"), "path leaving its folder"),
        ("tar", lambda tf: _tar_add(tf, "/etc/evil", b"x"), "absolute path"),
        ("tar", lambda tf: _tar_link(tf, "llama/libx.so", "../../../etc/passwd"), "link escaping"),
        ("tar", lambda tf: _tar_link(tf, "llama/libx.so", "/usr/lib/libc.so.6"), "link escaping"),
        ("tar", lambda tf: _tar_link(tf, "llama/hard", "../outside", hard=True), "path leaving"),
        ("zip", lambda zf: _zip_add(zf, "..\\evil.dll", b"x"), "path leaving its folder"),
        ("zip", lambda zf: _zip_add(zf, "C:/Windows/evil.dll", b"x"), "absolute path"),
        ("zip", lambda zf: _zip_symlink(zf, "bin/lib.so", "../../x"), "link escaping"),
    ],
)
def test_malicious_archives_are_refused_before_writing(tmp_path: Path, kind: str, build: object,
                                                       needle: str) -> None:
    if kind == "tar":
        archive = _tgz(tmp_path / "evil.tar.gz", lambda tf: (_tar_add(tf, "llama/ok.txt", b"fine"), build(tf)))  # type: ignore[operator]
    else:
        archive = tmp_path / "evil.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            _zip_add(zf, "ok.txt", b"fine")
            build(zf)  # type: ignore[operator]
    dest = tmp_path / "out"
    with pytest.raises(UnsafeArchiveError, match=needle):
        safe_extract(archive, dest)
    assert list(dest.rglob("*")) == []  # checked before anything was written
    assert not (tmp_path / "evil.sh").exists()


def test_in_tree_symlink_chains_are_kept(tmp_path: Path) -> None:
    def build(tf: tarfile.TarFile) -> None:
        _tar_add(tf, "top/lib/libggml.so.0.20.0", b"ELF")
        _tar_link(tf, "top/lib/libggml.so.0", "libggml.so.0.20.0")
        _tar_link(tf, "top/lib/libggml.so", "libggml.so.0")
        _tar_link(tf, "top/bin/libggml.so", "../lib/libggml.so")

    safe_extract(_tgz(tmp_path / "ok.tar.gz", build), tmp_path / "out")
    assert (tmp_path / "out/top/bin/libggml.so").read_bytes() == b"ELF"
    assert os.readlink(tmp_path / "out/top/lib/libggml.so") == "libggml.so.0"


def test_damaged_archive(tmp_path: Path) -> None:
    bad = tmp_path / "cut.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(EngineInstallError, match="damaged"):
        safe_extract(bad, tmp_path / "out")


def test_malicious_release_install_leaves_nothing(github: GitHubServer, tmp_path: Path) -> None:
    evil = tmp_path / "llama-b7601-bin-ubuntu-x64.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        _zip_add(zf, "llama-server", b"#!/bin/sh\n", 0o755)
        _zip_symlink(zf, "libggml.so", "/lib/x86_64-linux-gnu/libc.so.6")
    github.add_release(UPSTREAM, "b7601", [evil])
    h = Harness(github.api_base, tmp_path / "s", {}, Settings())

    async def body(svc):  # type: ignore[no-untyped-def]
        plan = await svc.plan([])
        await svc.install(plan.included[0])

    with pytest.raises(UnsafeArchiveError):
        h.run(body)
    leftovers = [p.name for d in (h.root / "engines", h.root / "downloads") if d.exists() for p in d.iterdir()]
    assert leftovers == []


HEADER = ("transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,ldc,stride_c,ldd,"
          "stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,scaleC,scaleD,amaxD,activation_type,"
          "bias_vector,bias_type,rotating_buffer,hipblaslt-Gflops,hipblaslt-GB/s,us,solution_index,kernel_name")
ROW = ("N,N,0,1,4096,512,4096,1,4096,16777216,0,4096,2097152,4096,2097152,4096,2097152,f16_r,f16_r,f16_r,f16_r,"
       "f32_r,0,0,0,0,0,none,0,f16_r,512,61234.5,410.2,280.6,73125,"
       "Cijk_Ailk_Bljk_HHS_BH_MT256x128x64_MI16x16x16x1_SN_1LDSB1_GRVW8")


def _table(tmp_path: Path, first: str = "Git Version: d5f81531", header: str = HEADER, rows: tuple[str, ...] = (ROW, ROW)) -> Path:
    p = tmp_path / "table.csv"
    p.write_text("\n".join([first, header, *rows]) + "\n")
    return p


def test_tuning_table_matching(tmp_path: Path) -> None:
    ok = validate_tuning_table(_table(tmp_path), table_gfx="gfx1151", gpu_gfx="gfx1151", engine_revision="d5f81531")
    assert ok.ok and ok.rows == 2 and ok.revision == "d5f81531"


@pytest.mark.parametrize(
    ("kwargs", "table_args", "needle"),
    [
        ({"engine_revision": "3b3d59eb"}, {},
         "table is for hipBLASLt d5f81531, this engine ships 3b3d59eb: prefill will use untuned kernels"),
        ({"gpu_gfx": "gfx1100"}, {}, "table is for gfx1151, this GPU is gfx1100"),
        ({}, {"first": "transA,transB"}, "no 'Git Version:' line 1"),
        ({}, {"header": HEADER.replace("solution_index", "sol")}, "header lacks key columns solution_index"),
        ({}, {"rows": (ROW, ROW.replace(",4096,512,", ",4096,five,", 1))}, "line 4 does not parse (n)"),
        ({}, {"rows": (ROW + ",extra",)}, "line 3 has 37 fields"),
        ({"engine_revision": None}, {}, "revision is unknown"),
    ],
)
def test_tuning_table_rejections(tmp_path: Path, kwargs: dict[str, object], table_args: dict[str, object],
                                 needle: str) -> None:
    args: dict[str, object] = {"table_gfx": "gfx1151", "gpu_gfx": "gfx1151", "engine_revision": "d5f81531"}
    args.update(kwargs)
    table = _table(tmp_path, **table_args)  # type: ignore[arg-type]
    check = check_tuning_table(table, **args)  # type: ignore[arg-type]
    assert not check.ok and needle in check.reason
    with pytest.raises(TuningTableError):
        validate_tuning_table(table, **args)  # type: ignore[arg-type]


def _engine(tmp_path: Path, backend: str, **kw: object) -> InstalledEngine:
    folder = tmp_path / "eng"
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    return InstalledEngine(id="e", backend=backend, folder=folder, server_path=folder / "bin" / "llama-server",
                           tag="b1", **kw)  # type: ignore[arg-type]


def test_launch_environment_rocm_with_valid_and_invalid_table(tmp_path: Path) -> None:
    table = _table(tmp_path)
    eng = _engine(tmp_path, "rocm", gfx_targets=("gfx1151",), family="gfx1151",
                  env={"OCL_SET_SVM_SIZE": "262144"}, hipblaslt_revision="d5f81531",
                  tuning=TuningRef(str(table), "gfx1151", "d5f81531"))
    base = {"LD_LIBRARY_PATH": "/opt/x", "HIPBLASLT_TUNING_FILE": "/tmp/w.csv", "PATH": "/usr/bin"}
    env, notices = launch_environment(eng, GpuTarget("8060S", 0x1586, "gfx1151"), Settings(), base, os_name="linux")
    assert env["LD_LIBRARY_PATH"] == f"{eng.folder / 'bin'}:/opt/x"
    assert env["HIPBLASLT_TUNING_OVERRIDE_FILE"] == str(table)
    assert "HIPBLASLT_TUNING_FILE" not in env and env["OCL_SET_SVM_SIZE"] == "262144"
    assert notices == []

    other = _engine(tmp_path, "rocm", gfx_targets=("gfx1151",), hipblaslt_revision="3b3d59eb",
                    tuning=TuningRef(str(table), "gfx1151", "d5f81531"))
    env, notices = launch_environment(other, None, Settings(gfx_override="gfx1151"),
                                      {"HIPBLASLT_TUNING_OVERRIDE_FILE": "/x.csv"}, os_name="windows")
    assert "HIPBLASLT_TUNING_OVERRIDE_FILE" not in env
    assert env["PATH"].startswith(str(other.folder / "bin"))
    assert "this engine ships 3b3d59eb: prefill will use untuned kernels" in notices[0]

    env, notices = launch_environment(other, GpuTarget("7600", 0x7480, "gfx1102"), Settings(), {}, os_name="linux")
    assert "not gfx1102" in notices[0]


def test_launch_environment_vulkan_software_device_override(tmp_path: Path) -> None:
    eng = _engine(tmp_path, "vulkan")
    env, _ = launch_environment(eng, None, Settings(), {}, os_name="linux")
    assert "GGML_VK_VISIBLE_DEVICES" not in env
    env, _ = launch_environment(eng, None, Settings(), {"STRATA_VK_VISIBLE_DEVICES": "0"}, os_name="linux")
    assert env["GGML_VK_VISIBLE_DEVICES"] == "0"


def test_device_parser_and_verdicts() -> None:
    text = ("Available devices:\n  ROCm0: AMD Radeon RX 7900 XTX (24560 MiB, 24000 MiB free)\n"
            "  Vulkan0: AMD Radeon RX 7900 XTX (RADV NAVI31) (24560 MiB, 23000 MiB free)\n")
    devs = parse_list_devices(text)
    assert [(d.name, d.kind, d.total_mib, d.free_mib) for d in devs] == [
        ("ROCm0", "ROCm", 24560, 24000), ("Vulkan0", "Vulkan", 24560, 23000)]
    assert devs[1].description == "AMD Radeon RX 7900 XTX (RADV NAVI31)"
    assert parse_list_devices("Available devices:\n  (none)\n") == []
    version = ProcessRun(0, "version: 7601 (abc)\nbuilt with MSVC\n")
    assert judge("rocm", version, ProcessRun(0, text)).verdict == "works"
    # Windows loader failure: exit status STATUS_DLL_NOT_FOUND, nothing printed
    failed = judge("rocm", ProcessRun(0xC0000135), None)
    assert failed.verdict == "failed" and "DLL was not found" in failed.message
    assert judge("vulkan", ProcessRun(None, error="did not answer within 30 s"), None).message.endswith("30 s")


@pytest.mark.engine
def test_probe_runs_under_a_qasync_loop(qasync_loop: asyncio.AbstractEventLoop, test_engines: TestEngines) -> None:
    result = qasync_loop.run_until_complete(
        probe_engine(test_engines.vulkan_server, "vulkan", test_engines.vulkan_env(), timeout=60))
    assert result.verdict == "works" and result.devices[0].kind == "Vulkan"
    missing = qasync_loop.run_until_complete(probe_engine(Path("/nonexistent/llama-server"), "cpu", {}))
    assert missing.verdict == "failed"


def test_catalog_family_env_used_in_manifest_roundtrip(tmp_path: Path) -> None:
    eng = _engine(tmp_path, "rocm", env={"OCL_SET_SVM_SIZE": "262144"}, gfx_targets=("gfx1151",))
    eng.write_manifest()
    from strata_gui.core.engines.records import read_manifest

    back = read_manifest(eng.folder)
    assert back == eng
    (eng.folder / "strata-engine.json").write_text("{}")
    with pytest.raises(EngineInstallError, match="damaged"):
        read_manifest(eng.folder)
