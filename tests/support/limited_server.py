"""A local API server in a process that may open few files (the hostile-client tests).

``python -m tests.support.limited_server NOFILE HEADER_TIMEOUT_S KEY``: lowers its own file limit to
NOFILE, serves with the key and no models, prints its port, and stops when its stdin closes.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import sys

from strata_gui.core.serve.records import ServerLimits
from strata_gui.core.serve.server import ApiServer
from tests.support.engine_router import EngineRouter


async def main(nofile: int, header_timeout_s: float, key: str) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    server = ApiServer(EngineRouter([]), port=0, api_key=key, limits=ServerLimits(header_timeout_s=header_timeout_s))
    await server.start()
    guard = server.connections
    assert guard is not None
    print(server.port, guard.max_connections, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the test closes our stdin
    print(f"evicted {guard.evicted} refused {guard.refused}", file=sys.stderr, flush=True)
    await server.stop(1.0)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]))
