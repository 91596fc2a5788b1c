"""`strata rpc` with real rpc-server workers on loopback."""

from __future__ import annotations

import json

import pytest

from strata_gui import cli
from strata_gui.core.runtime.rpc_server import RpcServerProcess
from tests.support.engines import TestEngines, free_port

pytestmark = pytest.mark.engine


def test_add_list_remove(two_workers: list[RpcServerProcess], test_engines: TestEngines,
                         capsys: pytest.CaptureFixture[str]) -> None:
    a, b = (w.address for w in two_workers)
    engine = ["--engine", str(test_engines.vulkan_dir)]
    assert cli.main(["rpc", "add", a, *engine]) == 0
    assert f"{a}\treachable\tRPC0" in capsys.readouterr().out
    assert cli.main(["rpc", "add", b]) == 0
    capsys.readouterr()
    dead = f"127.0.0.1:{free_port()}"
    assert cli.main(["rpc", "add", dead]) == 0
    assert "unreachable" in capsys.readouterr().out
    assert cli.main(["rpc", "list", "--json", *engine]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["enabled"] is True
    assert [(w["address"], w["reachable"], len(w["devices"])) for w in data["workers"]] == [
        (a, True, 1), (b, True, 1), (dead, False, 0)]
    assert cli.main(["rpc", "remove", dead]) == 0
    assert cli.main(["rpc", "disable"]) == 0
    capsys.readouterr()
    assert cli.main(["rpc", "list"]) == 0
    out = capsys.readouterr().out
    assert "disabled" in out and dead not in out


def test_serve_lends_this_machine_with_a_warning(test_engines: TestEngines,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    assert cli.main(["rpc", "serve", "--engine", str(test_engines.vulkan_dir), "--port", str(port),
                     "-d", "CPU", "--duration", "0.5"]) == 0
    captured = capsys.readouterr()
    assert "no password and no encryption" in captured.err
    assert f"lending this machine at 127.0.0.1:{port}" in captured.out
    assert f"strata rpc add 127.0.0.1:{port}" in captured.out
