"""Regenerate the ``*_pb2.py`` modules from the ``.proto`` files beside this script.

Run from anywhere (``grpcio-tools`` is a development tool, not a runtime dependency)::

    python engine/formats/tensorflow/proto/generate.py

The ``.proto`` files carry TensorFlow's field numbers under a package of our own
(``flowserve.tensorflow``) and file paths under ``engine/formats/tensorflow/proto/``, so these
messages never collide in protobuf's descriptor pool with TensorFlow's, TensorBoard's or
tritonclient's own copies loaded in the same process; the wire format has no package names.
"""

from __future__ import annotations

import pathlib
import re
import sys

from grpc_tools import protoc  # development dependency only (the "protoc" extra)

# protoc pins the generated modules to its own protobuf runtime version or newer. The
# messages use only the long-stable builder API, so the pin is dropped: the modules then load
# with any protobuf >= 4.21 (the floor in pyproject.toml), whichever version TensorFlow,
# tritonclient or grpcio-tools put beside us.
_VERSION_CHECK = re.compile(
    r"from google\.protobuf import runtime_version as _runtime_version\n"
    r"|_runtime_version\.ValidateProtobufRuntimeVersion\(.*?\)\n",
    re.S,
)


def main() -> int:
    here = pathlib.Path(__file__).resolve().parent
    root = here.parents[3]
    well_known = pathlib.Path(protoc.__file__).parent / "_proto"
    protos = sorted(str(p.relative_to(root)) for p in here.glob("*.proto"))
    args = ["protoc", f"-I{root}", f"-I{well_known}", f"--python_out={root}", *protos]
    rc = protoc.main(args)
    if rc != 0:
        print("protoc failed", file=sys.stderr)
        return rc
    for module in here.glob("*_pb2.py"):
        text = module.read_text()
        module.write_text(_VERSION_CHECK.sub("", text).replace("NO CHECKED-IN", "CHECKED-IN"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
