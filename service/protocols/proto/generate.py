"""Regenerates the ``*_pb2.py`` modules of this directory from its ``.proto`` files.

Run from anywhere: ``python service/protocols/proto/generate.py`` (needs ``grpcio-tools``).
Only message modules are generated: the services are registered by hand with
``grpc.method_handlers_generic_handler`` under their canonical wire names.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent


def main() -> int:
    root = HERE.parents[2]  # the repository root: imports are service.protocols.proto.*
    protos = sorted(str(p.relative_to(root)) for p in HERE.glob("*.proto"))
    args = ["protoc", f"-I{root}", f"--python_out={root}", *protos]
    return protoc.main(args)


if __name__ == "__main__":
    sys.exit(main())
