"""Model-local functions (``ModelProto.functions``), expanded in place before import.

Exporters built on onnxscript (``torch.onnx.export(..., dynamo=True)`` without its optimizer,
onnxscript models, some converters) write a model whose graph calls functions the file defines:
a node whose ``(domain, op_type, overload)`` names a ``FunctionProto``. onnxruntime inlines
such calls; so do we, on the decoded dicts, so that everything after it (the unsupported-
operator report, the summary, the converters) sees plain nodes.

Each call is replaced by the function's body with:

- formal inputs and outputs renamed to the call's actual names (an omitted optional input is
  the empty name, as if the body's node had no such input);
- every other name defined in the body, nested subgraphs included, prefixed with the call's
  unique scope, so two calls never clash with each other or with the graph;
- attribute references (``ref_attr_name``) replaced by the call's attribute of that name, else
  the function's default (``attribute_proto``), else dropped so the operator's default applies;
- default-domain nodes tagged with the function's own opset (``_opset``) when it differs from
  the model's.

Calls nest (a body may call another function, up to ``MAX_CALL_DEPTH``); recursion, and bodies
that would expand past ``MAX_INLINED_NODES`` nodes, are refused with a clear error.
"""

from __future__ import annotations

import copy

from engine.formats.onnx.mapping import UnsupportedModelError
from engine.formats.onnx.tensors import OnnxFormatError

__all__ = ["MAX_CALL_DEPTH", "MAX_FUNCTIONS", "MAX_INLINED_NODES", "inline_functions"]

MAX_FUNCTIONS = 100_000
MAX_CALL_DEPTH = 32
MAX_INLINED_NODES = 1_000_000
_DEFAULT_DOMAINS = ("", "ai.onnx")


def _domain(d: str) -> str:
    return "" if d in _DEFAULT_DOMAINS else d


def _key(domain: str, name: str, overload: str) -> tuple[str, str, str]:
    return (_domain(domain), name, overload)


def _opsets(entries: list) -> dict[str, int]:
    return {_domain(o.get("domain", "")): int(o.get("version", 0)) for o in entries}


class _Inliner:
    def __init__(self, model: dict):
        listed = model.get("functions", [])
        if len(listed) > MAX_FUNCTIONS:
            raise OnnxFormatError(
                f"model defines {len(listed)} functions; the limit is {MAX_FUNCTIONS}"
            )
        self.functions: dict[tuple[str, str, str], dict] = {}
        for f in listed:
            key = _key(f.get("domain", ""), f.get("name", ""), f.get("overload", ""))
            if key in self.functions:
                raise OnnxFormatError(f"function {self._label(key)} is defined twice")
            self.functions[key] = f
        self.model_default = _opsets(model.get("opset_import", [])).get("")
        self.calls = 0
        self.nodes = 0
        # First parts of the graph's own "a/b" names: a call's scope never takes one of them.
        self.taken = {n.split("/", 1)[0] for n in _graph_names(model["graph"], set()) if "/" in n}

    @staticmethod
    def _label(key: tuple[str, str, str]) -> str:
        domain, name, overload = key
        label = f"{domain}.{name}" if domain else name
        return f"{label}:{overload}" if overload else label

    # -- graphs ---------------------------------------------------------------------------
    def graph(self, g: dict, stack: tuple, default_opset: int | None) -> None:
        """Expands every call in ``g`` (and its subgraphs) in place."""
        out = []
        for node in g.get("node", []):
            out.extend(self.node(node, stack, default_opset))
        g["node"] = out

    def node(self, node: dict, stack: tuple, default_opset: int | None) -> list[dict]:
        for a in node.get("attribute", []):
            for sub in ([a["g"]] if "g" in a else []) + list(a.get("graphs", [])):
                self.graph(sub, stack, default_opset)
        key = _key(node.get("domain", ""), node.get("op_type", ""), node.get("overload", ""))
        fn = self.functions.get(key)
        self._count(1)  # calls count too: bodies made only of calls must not fan out unbounded
        if fn is None:
            return [node]
        if key in stack:
            raise UnsupportedModelError(f"function {self._label(key)} calls itself")
        if len(stack) >= MAX_CALL_DEPTH:
            raise UnsupportedModelError(f"function calls nest deeper than {MAX_CALL_DEPTH}")
        return self.expand(node, fn, stack + (key,))

    def _count(self, n: int) -> None:
        self.nodes += n
        if self.nodes > MAX_INLINED_NODES:
            raise UnsupportedModelError(
                f"model expands to more than {MAX_INLINED_NODES} nodes once its functions "
                "are inlined"
            )

    # -- one call -------------------------------------------------------------------------
    def expand(self, call: dict, fn: dict, stack: tuple) -> list[dict]:
        label = self._label(stack[-1])
        formal_in, formal_out = fn.get("input", []), fn.get("output", [])
        actual_in, actual_out = call.get("input", []), call.get("output", [])
        if len(actual_in) > len(formal_in) or len(actual_out) > len(formal_out):
            raise OnnxFormatError(
                f"call of function {label} has {len(actual_in)} inputs and {len(actual_out)} "
                f"outputs; the function declares {len(formal_in)} and {len(formal_out)}"
            )
        base = str(call.get("name") or fn.get("name", "function")).replace("/", "_")
        scope = ""
        while not scope or scope in self.taken:
            self.calls += 1
            scope = f"{base}__call{self.calls}"
        names = {f: (actual_in[i] if i < len(actual_in) else "") for i, f in enumerate(formal_in)}
        # An output the call leaves out (or names "") is still a value inside the body.
        names.update(
            {
                f: (actual_out[i] if i < len(actual_out) and actual_out[i] else f"{scope}/{f}")
                for i, f in enumerate(formal_out)
            }
        )
        attrs = self._attributes(call, fn, label)
        fn_opsets = _opsets(fn.get("opset_import", []))
        default_opset = fn_opsets.get("", self.model_default)
        body = copy.deepcopy(fn.get("node", []))

        def rename(n: str) -> str:
            if not n or n in names:
                return names.get(n, n)
            return f"{scope}/{n}"

        for node in body:
            self._rewrite(node, rename, scope, attrs, default_opset)
        out = []
        for node in body:
            out.extend(self.node(node, stack, default_opset))
        return out

    def _attributes(self, call: dict, fn: dict, label: str) -> dict[str, dict]:
        declared = set(fn.get("attribute", [])) | {
            a.get("name", "") for a in fn.get("attribute_proto", [])
        }
        given = {a.get("name", ""): a for a in call.get("attribute", [])}
        unknown = sorted(set(given) - declared)
        if unknown:
            raise OnnxFormatError(
                f"call of function {label} sets attribute(s) {unknown} it does not declare "
                f"(declared: {sorted(declared)})"
            )
        values = {a.get("name", ""): a for a in fn.get("attribute_proto", [])}
        values.update(given)
        return values

    def _rewrite(self, node: dict, rename, scope: str, attrs: dict, opset) -> None:
        node["input"] = [rename(n) for n in node.get("input", [])]
        node["output"] = [rename(n) for n in node.get("output", [])]
        node["name"] = f"{scope}/{node.get('name') or node.get('op_type', 'node')}"
        if _domain(node.get("domain", "")) == "" and opset is not None:
            if opset != self.model_default:
                node["_opset"] = opset
        kept = []
        for a in node.get("attribute", []):
            ref = a.get("ref_attr_name")
            if ref:
                if ref not in attrs:
                    continue
                a = dict(attrs[ref], name=a.get("name", ""))
                a.pop("ref_attr_name", None)
            for sub in ([a["g"]] if "g" in a else []) + list(a.get("graphs", [])):
                self._rewrite_graph(sub, rename, scope, attrs, opset)
            kept.append(a)
        node["attribute"] = kept

    def _rewrite_graph(self, g: dict, rename, scope: str, attrs: dict, opset) -> None:
        for key in ("input", "output", "value_info"):
            for vi in g.get(key, []):
                vi["name"] = rename(vi.get("name", ""))
        for t in g.get("initializer", []):
            t["name"] = rename(t.get("name", ""))
        for node in g.get("node", []):
            self._rewrite(node, rename, scope, attrs, opset)


def _graph_names(g: dict, out: set) -> set:
    """Every value name ``g`` and its subgraphs define or use."""
    for key in ("input", "output", "value_info", "initializer"):
        out.update(v.get("name", "") for v in g.get(key, []))
    for node in g.get("node", []):
        out.update(node.get("input", []))
        out.update(node.get("output", []))
        for a in node.get("attribute", []):
            for sub in ([a["g"]] if "g" in a else []) + list(a.get("graphs", [])):
                _graph_names(sub, out)
    return out


def inline_functions(model: dict) -> None:
    """Replaces every call of a model-local function in ``model['graph']`` by its body."""
    if not model.get("functions") or "graph" not in model:
        return
    inliner = _Inliner(model)
    inliner.graph(model["graph"], (), inliner.model_default)
