"""The interactive graph view: its static assets, and an offline single-file HTML page.

The same three assets draw a graph in the server's console (``/console``) and in the file
that ``python -m engine inspect DIR --html out.html`` writes: ``graph.js`` (name scopes as
boxes that expand on click, pan/zoom, details on hover), ``graph.css`` and the vendored
dagre layout library (``vendor/dagre.min.js``, MIT, see ``vendor/dagre.LICENSE``). Each takes
the description that ``engine.graph_inspection.describe_graph`` returns.
"""

from __future__ import annotations

import html
import json
from importlib import resources

__all__ = ["ASSETS", "asset", "render_html"]

# name -> content type; the only files ``asset`` serves.
ASSETS = {
    "graph.js": "text/javascript; charset=utf-8",
    "graph.css": "text/css; charset=utf-8",
    "dagre.min.js": "text/javascript; charset=utf-8",
    "dagre.LICENSE": "text/plain; charset=utf-8",
}
_PATHS = {
    "graph.js": ("graph.js",),
    "graph.css": ("graph.css",),
    "dagre.min.js": ("vendor", "dagre.min.js"),
    "dagre.LICENSE": ("vendor", "dagre.LICENSE"),
}


def asset(name: str) -> bytes:
    """The bytes of asset ``name`` (one of ``ASSETS``); KeyError for any other name."""
    parts = _PATHS[name]
    return resources.files(__name__).joinpath(*parts).read_bytes()


def _inline_script(source: str) -> str:
    # A script element ends at the first "</script" whatever its context; none may appear.
    return source.replace("</script", "<\\/script")


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
html, body {{ margin: 0; height: 100%; font: 14px system-ui, sans-serif; color: #1f2430; }}
header {{ height: 25px; padding: 8px 14px; border-bottom: 1px solid #d8dbe2; display: flex;
  gap: 16px; align-items: baseline; white-space: nowrap; overflow: hidden; }}
header h1 {{ font-size: 16px; margin: 0; }}
header span {{ color: #5f6675; font-size: 13px; }}
#graph {{ position: absolute; top: 42px; left: 0; right: 0; bottom: 0; border: 0;
  border-radius: 0; }}
{css}
</style>
</head>
<body>
<header><h1>{title}</h1><span>{subtitle}</span>
<span>click a scope to expand it, its title to collapse it; drag to pan, wheel to zoom,
double-click to fit</span></header>
<div id="graph"></div>
<script type="application/json" id="graph-data">{data}</script>
<script>
/* dagre {dagre_license_note} */
{dagre}
</script>
<script>
{graph_js}
</script>
<script>
FlowGraph.create(document.getElementById("graph"),
  JSON.parse(document.getElementById("graph-data").textContent));
</script>
</body>
</html>
"""


def render_html(description: dict, title: str, subtitle: str = "") -> str:
    """A self-contained HTML page (scripts and styles inlined, nothing fetched) drawing the
    graph ``description`` (from ``engine.graph_inspection.describe_graph``)."""
    # "<" escaped as \\u003c: still the same JSON, and no "</script>" can end the element.
    data = json.dumps(description, separators=(",", ":")).replace("<", "\\u003c")
    return _PAGE.format(
        title=html.escape(title),
        subtitle=html.escape(subtitle),
        css=asset("graph.css").decode(),
        data=data,
        dagre_license_note="(MIT): " + _license_line(),
        dagre=_inline_script(asset("dagre.min.js").decode()),
        graph_js=_inline_script(asset("graph.js").decode()),
    )


def _license_line() -> str:
    text = asset("dagre.LICENSE").decode()
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.replace("*/", "* /")
