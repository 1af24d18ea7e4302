"""The floor for the HTTP path: a bare aiohttp handler that parses the same JSON request as
the server's predict endpoint and answers a precomputed response of the same size.

    python bench/bare_server.py --port 9000 --response-file response.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service.protocols.common import parse_json  # noqa: E402 - the server's own JSON parser


def make_app(response_body: bytes) -> web.Application:
    async def predict(request: web.Request) -> web.Response:
        doc = parse_json(await request.read())  # the same parsing work as the server
        if "instances" not in doc and "inputs" not in doc:
            return web.json_response({"error": "bad request"}, status=400)
        return web.Response(body=response_body, content_type="application/json")

    async def ready(_request: web.Request) -> web.Response:
        return web.json_response({"ready": True})

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/models/{tail:.*}", predict)
    app.router.add_post("/v2/models/{tail:.*}", predict)  # the V2 JSON body, same reply
    app.router.add_get("/v2/health/ready", ready)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--response-file", required=True)
    args = parser.parse_args()
    with open(args.response_file, "rb") as f:
        body = f.read()
    web.run_app(make_app(body), host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
