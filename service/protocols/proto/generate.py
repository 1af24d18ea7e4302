"""Regenerates the ``*_pb2.py`` modules of this directory from its ``.proto`` files.

Run from anywhere: ``python service/protocols/proto/generate.py`` (needs ``grpcio-tools``).
Only message modules are generated: the services are registered by hand with
``grpc.method_handlers_generic_handler`` under their canonical wire names.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# protoc pins the generated modules to its own protobuf runtime or newer; the messages use only
# the long-stable builder API, so the pin is dropped (as engine/formats/tensorflow/proto does).
_VERSION_CHECK = re.compile(
    r"from google\.protobuf import runtime_version as _runtime_version\n"
    r"|_runtime_version\.ValidateProtobufRuntimeVersion\(.*?\)\n",
    re.S,
)


def main() -> int:
    from grpc_tools import protoc  # development dependency only (the "protoc" extra)

    root = HERE.parents[2]  # the repository root: imports are service.protocols.proto.*
    well_known = Path(protoc.__file__).parent / "_proto"
    protos = sorted(str(p.relative_to(root)) for p in HERE.glob("*.proto"))
    args = ["protoc", f"-I{root}", f"-I{well_known}", f"--python_out={root}", *protos]
    rc = protoc.main(args)
    if rc != 0:
        print("protoc failed", file=sys.stderr)
        return rc
    for module in HERE.glob("*_pb2.py"):
        text = module.read_text()
        module.write_text(_VERSION_CHECK.sub("", text).replace("NO CHECKED-IN", "CHECKED-IN"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
