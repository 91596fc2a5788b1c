"""llama.cpp RPC pooling: lend this machine's GPU (rpc-server), or spread a model over workers."""

from strata_gui.core.rpc.service import RpcPool
from strata_gui.core.rpc.workers import DEFAULT_RPC_PORT, TRUST_WARNING, RpcDevice, WorkerStatus

__all__ = [
    "DEFAULT_RPC_PORT",
    "TRUST_WARNING",
    "RpcDevice",
    "RpcPool",
    "WorkerStatus",
]
