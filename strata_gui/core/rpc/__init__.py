"""llama.cpp RPC pooling: lend this machine's GPU (rpc-server), or spread a model over workers."""
