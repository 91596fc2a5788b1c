"""Two real rpc-server workers on loopback (the Vulkan build's ggml-rpc-server on its CPU device)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from strata_gui.core.rpc.workers import rpc_server_executable
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.rpc_server import RpcServerProcess
from tests.support.engines import TestEngines, free_port


def rpc_env(engines: TestEngines) -> dict[str, str]:
    # No Vulkan device (llvmpipe would be slow): the workers and the server use their CPU backend.
    return {"LD_LIBRARY_PATH": str(engines.vulkan_dir), "GGML_VK_VISIBLE_DEVICES": ""}


def rpc_spec(engines: TestEngines) -> EngineSpec:
    return EngineSpec("vulkan-rpc", "Vulkan", "vulkan", engines.vulkan_server, rpc_env(engines))


def make_worker(engines: TestEngines) -> RpcServerProcess:
    exe = rpc_server_executable(engines.vulkan_dir)
    assert exe is not None
    return RpcServerProcess(exe, "127.0.0.1", free_port(), env=rpc_env(engines), devices=["CPU"])


@pytest.fixture
def two_workers(test_engines: TestEngines) -> Iterator[list[RpcServerProcess]]:
    workers = [make_worker(test_engines), make_worker(test_engines)]
    loop = asyncio.new_event_loop()
    try:
        for w in workers:
            loop.run_until_complete(w.start())
        yield workers
    finally:
        for w in workers:
            loop.run_until_complete(w.stop())
        loop.close()
