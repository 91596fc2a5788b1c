"""llama.cpp RPC pooling: lend this machine's GPU (rpc-server), or spread a model over workers."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.rpc.service import RpcPool
    from strata_gui.core.rpc.workers import DEFAULT_RPC_PORT, TRUST_WARNING, RpcDevice, WorkerStatus

__all__ = [
    "DEFAULT_RPC_PORT",
    "TRUST_WARNING",
    "RpcDevice",
    "RpcPool",
    "WorkerStatus",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "service": ["RpcPool"],
    "workers": ["DEFAULT_RPC_PORT", "TRUST_WARNING", "RpcDevice", "WorkerStatus"],
})
