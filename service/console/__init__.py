"""The web console at ``/console``: models, graphs, traffic and a try-it form.

The page is static (``static/``, shipped as package data; the graph view's assets come from
``engine.graph_view``) and reads four JSON endpoints, all behind the server's bearer token:

- ``GET /console/api/models``: every model version with its state, devices, instances, load
  time, last error and signatures (what the models view and the try-it form are built from);
- ``GET /v1/models/{m}/versions/{v}/graph``: the version's graph as loaded
  (``engine.graph_inspection.describe_graph``) and its signatures;
- ``GET /console/api/traffic``: per model version, request and error counts, latency and
  batch-size histograms, queue depth, read from the app's own metrics registry (the page
  turns successive snapshots into rates and windowed percentiles);
- predict and the repository's load/unload, through the ordinary protocol routes.

A browser cannot send ``Authorization`` headers when it navigates, so with ``--auth-token``
the console has a login form (``/console/login``) that checks the token and sets it as an
HttpOnly, SameSite=Strict cookie; the auth middleware accepts that cookie like the header.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import time
import weakref
from importlib import resources

from aiohttp import web

from engine import graph_inspection, graph_view
from service.console.traffic import traffic_summary
from service.errors import NotFound, ServingError
from service.keys import CONFIG, MANAGER, METRICS
from service.protocols.common import dumps, json_response, note
from service.repository import parse_version
from service.servable import Servable, Signature

__all__ = ["add_routes", "COOKIE", "LOGIN_PATH", "authorized_by_cookie", "login_redirect"]

COOKIE = "flowserve_token"
LOGIN_PATH = "/console/login"

# name -> content type: the console's own files, then the graph view's (engine.graph_view).
_STATIC = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
_NO_CACHE = {"Cache-Control": "no-cache"}


# The graph endpoint's answer per loaded version, built on first request.
_GRAPH_CACHE: web.AppKey[weakref.WeakKeyDictionary] = web.AppKey("console_graph_cache")


def add_routes(app: web.Application) -> None:
    """Registers the console page, its static files and JSON endpoints, and the graph
    endpoint."""
    app[_GRAPH_CACHE] = weakref.WeakKeyDictionary()
    app.router.add_get("/console", _index)
    app.router.add_get("/console/", _index)
    app.router.add_get("/console/static/{name}", _static)
    app.router.add_get(LOGIN_PATH, _login_form)
    app.router.add_post(LOGIN_PATH, _login)
    app.router.add_get("/console/api/models", _models)
    app.router.add_get("/console/api/traffic", _traffic)
    app.router.add_get("/v1/models/{model:[^/:]+}/versions/{version:[^/:]+}/graph", _graph)


# -- auth ---------------------------------------------------------------------------------------
def authorized_by_cookie(request: web.Request, token: str) -> bool:
    """Whether the request carries the console's token cookie with ``token``."""
    given = request.cookies.get(COOKIE)
    return given is not None and hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), token.encode("utf-8")
    )


def login_redirect(request: web.Request) -> None:
    """Sends an unauthenticated browser asking for the console page to the login form
    (raises the redirect; other requests keep their 401 JSON answer)."""
    if request.method == "GET" and request.path in ("/console", "/console/"):
        raise web.HTTPSeeOther(LOGIN_PATH)


_LOGIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>flowserve console: sign in</title>
<link rel="icon" href="data:,">
<style>
body { font: 14px system-ui, sans-serif; background: #f5f6f9; display: flex;
  justify-content: center; padding-top: 12vh; }
form { background: #fff; border: 1px solid #d8dbe2; border-radius: 8px; padding: 24px 28px;
  display: flex; flex-direction: column; gap: 12px; min-width: 320px; }
.error { color: #a4231d; }
</style></head>
<body><form method="post" action="/console/login">
<h1>flowserve console</h1><p>This server requires a bearer token.</p>
<label>Token <input type="password" name="token" autocomplete="current-password" autofocus>
</label><button type="submit">Sign in</button><p class="error">{error}</p></form></body></html>
"""


async def _login_form(request: web.Request) -> web.Response:
    if not request.app[CONFIG].auth_token:
        raise web.HTTPSeeOther("/console/")
    return web.Response(text=_LOGIN_PAGE.replace("{error}", ""), content_type="text/html")


async def _login(request: web.Request) -> web.Response:
    token = request.app[CONFIG].auth_token
    if not token:
        raise web.HTTPSeeOther("/console/")
    form = await request.post()
    given = form.get("token")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
        page = _LOGIN_PAGE.replace("{error}", html.escape("That token is not the server's."))
        return web.Response(text=page, status=401, content_type="text/html")
    response = web.HTTPSeeOther("/console/")
    response.set_cookie(
        COOKIE, token, httponly=True, samesite="Strict", secure=request.secure, path="/"
    )
    raise response


# -- the page -------------------------------------------------------------------------------
def _static_file(name: str) -> bytes:
    return resources.files(__name__).joinpath("static", name).read_bytes()


async def _index(_request: web.Request) -> web.Response:
    return web.Response(
        body=_static_file("index.html"),
        content_type="text/html",
        charset="utf-8",
        headers=_NO_CACHE,
    )


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name in _STATIC:
        body, content_type = _static_file(name), _STATIC[name]
    elif name in graph_view.ASSETS:
        body, content_type = graph_view.asset(name), graph_view.ASSETS[name]
    else:
        raise NotFound(f"no console file named {name!r}")
    return web.Response(body=body, headers={"Content-Type": content_type, **_NO_CACHE})


# -- JSON endpoints -------------------------------------------------------------------------
def signature_json(sig: Signature) -> dict:
    """A signature as the console shows it: inputs and outputs with tensor names, dtypes
    and shapes (``null`` for an unknown dimension or rank)."""

    def specs(table: dict) -> dict:
        return {
            alias: {
                "name": spec.tensor_name,
                "dtype": spec.dtype.base_dtype.name,
                "shape": None if spec.dims is None else list(spec.dims),
            }
            for alias, spec in sorted(table.items())
        }

    return {
        "method_name": sig.method_name,
        "inputs": specs(sig.inputs),
        "outputs": specs(sig.outputs),
        "batchable": sig.batchable,
    }


def _version_json(status, servable: Servable | None) -> dict:
    out = {
        "version": status.version,
        "state": status.state,
        "error": status.error,
        "devices": status.devices,
        "device_note": status.device_note,
        "instances": sum(d.get("instances", 0) for d in status.devices),
        "load_seconds": None,
        "signatures": {},
        "default_signature": None,
    }
    if servable is not None:
        out["load_seconds"] = servable.load_seconds
        out["signatures"] = {k: signature_json(s) for k, s in sorted(servable.signatures.items())}
        out["default_signature"] = servable.default_signature
    return out


async def _models(request: web.Request) -> web.Response:
    manager = request.app[MANAGER]
    models: dict[str, list] = {}
    for status in manager.index():
        servable = None
        if status.state == "AVAILABLE":
            try:
                servable = manager.resolve(status.model, status.version)
            except ServingError:  # retired between index() and resolve()
                servable = None
        models.setdefault(status.model, []).append(_version_json(status, servable))
    body = {
        "models": [
            {"name": name, "versions": sorted(vs, key=lambda v: -v["version"])}
            for name, vs in sorted(models.items())
        ],
        "auth": bool(request.app[CONFIG].auth_token),
        # Load/unload buttons only where the repository API accepts them (Triton's
        # model control mode "none" refuses them, and so do workers of --workers N).
        "repository_control": request.app[CONFIG].model_control_mode != "none"
        and request.app[CONFIG].worker is None,
    }
    return json_response(body, headers=_NO_CACHE)


async def _traffic(request: web.Request) -> web.Response:
    summary = traffic_summary(request.app[METRICS].combined())  # every worker's
    # Only differences between two polls are used (rates): a monotonic clock, so that a wall
    # clock step (NTP) never turns into a negative or huge rate.
    summary["time"] = time.monotonic()
    return json_response(summary, headers=_NO_CACHE)


async def _graph(request: web.Request) -> web.Response:
    name = request.match_info["model"]
    raw = request.match_info["version"]
    note(request, model=name, version=raw)
    version = parse_version(raw)
    if version is None:
        raise NotFound(f"Model '{name}' has no version {raw!r} (versions are positive integers)")
    servable = request.app[MANAGER].resolve(name, version)
    cache = request.app[_GRAPH_CACHE]
    body = cache.get(servable)
    if body is None:
        # A loaded graph is finalized: describe it once, off the event loop.
        loop = asyncio.get_running_loop()
        body = await loop.run_in_executor(None, _describe, servable)
        cache[servable] = body
    return web.Response(body=body, content_type="application/json", headers=_NO_CACHE)


def _describe(servable: Servable) -> bytes:
    graph = servable.graph
    if graph is None:
        raise NotFound(f"model '{servable.model}' version {servable.version} has no graph")
    description = graph_inspection.describe_graph(graph)
    description["model"] = servable.model
    description["version"] = servable.version
    description["signatures"] = {
        k: signature_json(s) for k, s in sorted(servable.signatures.items())
    }
    return dumps(description)
