"""TensorFlow Serving's REST API (``/v1/models/...``), parsed and serialized over the manager.

Endpoints (``{target}`` is ``/v1/models/{model}``, optionally followed by
``/versions/{version}`` or ``/labels/{label}``; without either, the latest available version):

- ``GET {target}``: version status, newest first, as ``{"model_version_status": [{"version":
  "2", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]}``. A
  version that failed to load is ``END`` with error code ``UNKNOWN`` and its error message.
  A loaded version also lists ``"devices"`` (an extension TF Serving clients ignore): per
  device, ``{"device": "gpu:0", "instances": 2, "memory_in_use_bytes": ...,
  "memory_limit_bytes": ...}`` (memory for accelerators only), and ``"device_note"`` when it
  fell back to the CPU.
- ``GET {target}/metadata``: ``{"model_spec": ..., "metadata": {"signature_def":
  {"signature_def": {key: {"inputs", "outputs", "method_name"}}}}}`` with TF's dtype names
  (``DT_FLOAT``) and shapes (``{"dim": [{"size": "-1", "name": ""}], "unknown_rank": false}``).
- ``POST {target}:predict``: ``{"signature_name": "...", "instances": [...]}`` (row format:
  one element per instance, an object naming the inputs or, for a one-input signature, a bare
  value; instances are stacked along a new leading dimension) answers ``{"predictions":
  [...]}``; ``{"signature_name": "...", "inputs": ...}`` (columnar: an object naming the
  inputs, or a bare value for a one-input signature) answers ``{"outputs": ...}`` (a bare value
  when the signature has one output). An optional ``"timeout"`` field, or the
  ``Request-Timeout`` header, sets the deadline in seconds (the smaller wins if both are given).

Strings: input strings are UTF-8 encoded; ``{"b64": "..."}`` objects anywhere in input data
are base64-decoded to bytes. A string output is returned as text when it is valid UTF-8 and
as ``{"b64": "..."}`` when it is not, or always when its alias ends in ``_bytes`` (TF
Serving's convention). NaN and infinities are the JSON tokens ``NaN``/``Infinity``, as TF
Serving writes them.

msgpack: a request with ``Content-Type: application/msgpack`` is the map ``{"signature_name":
str, "inputs": {alias: tensor} | tensor, "timeout": seconds}`` where a tensor is
``msgpack_codec``'s ``{"dtype": "float32", "shape": [2], "data": <raw little-endian bytes>}``
(strings: a list of bin values). Row format (``instances``) is JSON only. When the request is
msgpack or ``Accept`` names ``application/msgpack``, the answer is the msgpack map
``{"outputs": {alias: tensor}, "model_version": "2"}``. Errors are always JSON.

``POST {target}:classify`` / ``:regress``: ``{"signature_name", "context", "examples"}`` (each
example an object of features: ints, floats, strings or ``{"b64": ...}``, or lists of them)
for signatures of those methods (``service.protocols.tf_examples``); answers ``{"result":
[[[label, score], ...], ...]}`` / ``{"result": [value, ...]}``.

Differences from TF Serving: an unknown signature is 404 (TF Serving: 400); unknown top-level
request fields are rejected rather than ignored; non-UTF-8 string outputs are base64 objects
instead of invalid JSON.
"""

from __future__ import annotations

import base64
import binascii

import numpy as np
from aiohttp import web

from service import tracing
from service.errors import InvalidInput, NotFound
from service.keys import CONFIG, MANAGER
from service.keys import PROTOCOL as PROTOCOL_KEY
from service.protocols.common import (
    MSGPACK,
    body_at_hand,
    is_msgpack,
    json_response,
    note,
    parse_json,
    parse_timeout,
    read_body,
    wants_msgpack,
)
from service.protocols.json_numbers import JsonNumbers, parse_predict
from service.protocols.msgpack_codec import (
    decode_tensor,
    encode_tensor,
    is_tensor_map,
    packb,
    unpackb,
)
from service.protocols.tf_examples import (
    CLASSIFY,
    REGRESS,
    classification_result,
    examples_from_json,
    regression_result,
    serialized_examples,
    single_string_input,
)
from service.tensors import float_array, from_json_value

__all__ = ["add_routes"]

PROTOCOL = "tfserving"
_MODEL = "/v1/models/{model:[^/:]+}"
_TARGETS = ("", "/versions/{version:[^/:]+}", "/labels/{label:[^/:]+}")
_REQUEST_FIELDS = ("signature_name", "instances", "inputs", "timeout")
_FIELD_SET = frozenset(_REQUEST_FIELDS)
_MAX_DEPTH = 32
_DT_NAMES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF"}


def add_routes(app: web.Application) -> None:
    """Registers the ``/v1/models/...`` status, metadata and predict routes."""
    # Model, version and label segments exclude ':' so that "{model}:predict" only matches
    # the POST route: a GET there (or a POST on a status path) is a 405, not a lookup.
    for target in _TARGETS:
        app.router.add_get(_MODEL + target, _status)
        app.router.add_get(_MODEL + target + "/metadata", _metadata)
        app.router.add_post(_MODEL + target + ":{verb:[^/:]*}", _predict)


# -- handlers -------------------------------------------------------------------------------
async def _status(request: web.Request) -> web.Response:
    note(request, protocol=PROTOCOL)
    model, version, label = _target(request)
    statuses = request.app[MANAGER].status(model, version, label)
    note(request, model=model, version=statuses[0].version if version or label else None)
    return json_response({"model_version_status": [_version_status(st) for st in statuses]})


def _version_status(st) -> dict:
    entry = {
        "version": str(st.version),
        "state": st.state,
        "status": {"error_code": "UNKNOWN" if st.error else "OK", "error_message": st.error or ""},
    }
    if st.devices:  # flowserve's extension: where a loaded version runs
        entry["devices"] = st.devices
        if st.device_note:
            entry["device_note"] = st.device_note
    return entry


async def _metadata(request: web.Request) -> web.Response:
    note(request, protocol=PROTOCOL)
    model, version, label = _target(request)
    servable = request.app[MANAGER].resolve(model, version, label)
    note(request, model=servable.model, version=servable.version)
    signatures = {
        key: {
            "inputs": {a: _tensor_info(s) for a, s in sorted(sig.inputs.items())},
            "outputs": {a: _tensor_info(s) for a, s in sorted(sig.outputs.items())},
            "method_name": sig.method_name,
        }
        for key, sig in sorted(servable.signatures.items())
    }
    return json_response(
        {
            "model_spec": {
                "name": servable.model,
                "signature_name": "",
                "version": str(servable.version),
            },
            "metadata": {"signature_def": {"signature_def": signatures}},
        }
    )


async def _predict(request: web.Request) -> web.Response:
    request[PROTOCOL_KEY] = PROTOCOL
    model, version, label = _target(request)
    verb = request.match_info["verb"]
    if verb in ("classify", "regress"):
        return await _classify_or_regress(request, model, version, label, verb)
    if verb != "predict":
        raise NotFound(
            f"Unknown API ':{verb}' (this server supports :predict, :classify, :regress)"
        )
    manager = request.app[MANAGER]
    servable = manager.resolve(model, version, label)
    note(request, model=servable.model, version=servable.version)

    traced = tracing.traced(request)
    if traced:
        tracing.phase(request, "parse", model=servable.model)
    packed = is_msgpack(request)
    raw = body_at_hand(request)
    if raw is None:
        raw = await read_body(request)
    body = unpackb(raw) if packed else parse_predict(raw)
    # Without bool tokens in the body, numeric instances can be converted in one step
    # (numpy would silently turn a stray bool into a number). A one-byte search first: a
    # body without "u" (or "l") holds no "true" (or "false"), and numbers hold neither.
    # Instances the fast parse read (JsonNumbers) hold no bool (its copy refuses them) and
    # are the only tensor ``fast`` is asked about (``_row_inputs``): no search for those.
    fast = not packed and (_numbers_only(body) or not _has_bool_token(raw))
    _check_fields(body, packed)
    header = request.headers.get("Request-Timeout")
    field = body.get("timeout")
    timeout = None if header is None and field is None else _timeout(header, field)
    signature = servable.signature(body.get("signature_name") or None)
    row_format = "instances" in body
    if packed:
        limit = request.app[CONFIG].max_tensor_elements
        inputs = _msgpack_inputs(body["inputs"], signature, limit)
    elif row_format:
        inputs = _row_inputs(body["instances"], signature, fast)
    else:
        inputs = _columnar_inputs(body["inputs"], signature)

    if traced:
        tracing.phase(request, None)
    result = await manager.infer(
        model,
        inputs,
        version=version,
        label=label,
        signature=signature.key,
        timeout=timeout,
        servable=servable,
    )
    if result.version != servable.version:  # "latest" moved on while it waited
        note(request, version=result.version)
    if traced:
        tracing.phase(request, "encode", model=result.model, version=result.version)
    if packed or wants_msgpack(request, packed):
        return web.Response(
            body=packb(
                {
                    "outputs": {a: encode_tensor(v) for a, v in result.outputs.items()},
                    "model_version": str(result.version),
                }
            ),
            content_type=MSGPACK,
        )
    if row_format:
        return json_response({"predictions": _predictions(result.outputs)})
    values = {a: _to_json(v, a) for a, v in result.outputs.items()}
    return json_response({"outputs": next(iter(values.values())) if len(values) == 1 else values})


async def _classify_or_regress(
    request: web.Request, model: str, version: str | None, label: str | None, verb: str
) -> web.Response:
    """``{"signature_name", "context", "examples"}`` in, ``{"result": ...}`` out (TF Serving's
    Classify: per example ``[[label, score], ...]``; Regress: per example a value)."""
    manager = request.app[MANAGER]
    body = parse_json(await read_body(request))
    if not isinstance(body, dict):
        raise InvalidInput("The request body must be a JSON object with 'examples'")
    unknown = sorted(set(body) - {"signature_name", "context", "examples", "timeout"})
    if unknown:
        raise InvalidInput(f"Unknown field(s) {unknown} in the :{verb} request")
    method = CLASSIFY if verb == "classify" else REGRESS
    servable, sig = manager.signature_info(model, version, label, body.get("signature_name"))
    note(request, model=servable.model, version=servable.version)
    if sig.method_name != method:
        raise InvalidInput(
            f"Expected {verb} signature method_name to be {method}. Was: {sig.method_name}"
        )
    examples = serialized_examples(examples_from_json(body.get("examples"), body.get("context")))
    result = await manager.infer(
        model,
        {single_string_input(sig): examples},
        version=version,
        label=label,
        signature=sig.key,
        timeout=_timeout(request.headers.get("Request-Timeout"), body.get("timeout")),
        servable=servable,
    )
    if verb == "classify":
        rows = classification_result(result).classifications
        return json_response({"result": [[[c.label, c.score] for c in r.classes] for r in rows]})
    return json_response({"result": [r.value for r in regression_result(result).regressions]})


# -- requests -------------------------------------------------------------------------------
def _target(request: web.Request) -> tuple[str, str | None, str | None]:
    info = request.match_info
    model, version = info["model"], info.get("version")
    if version is not None and not (version.isascii() and version.isdigit()):
        raise InvalidInput(
            f"Malformed request: version {version!r} of model '{model}' is not "
            "a number (versions are positive integers)"
        )
    return model, version, info.get("label")


def _check_fields(body, packed: bool) -> None:
    kind = "msgpack" if packed else "JSON"
    if not isinstance(body, dict):
        raise InvalidInput(
            f"The request body must be a {kind} object with 'instances' or "
            f"'inputs', got {type(body).__name__}"
        )
    if not _FIELD_SET.issuperset(body):
        unknown = sorted(str(k) for k in body if k not in _REQUEST_FIELDS)
        raise InvalidInput(f"Unknown request field(s) {unknown}; expected {list(_REQUEST_FIELDS)}")
    if "instances" in body and "inputs" in body:
        raise InvalidInput(
            "The request has both 'instances' and 'inputs'; send exactly one "
            "('instances' for row format, 'inputs' for columnar format)"
        )
    if packed and "instances" in body:
        raise InvalidInput(
            "msgpack requests use 'inputs' (tensor maps); 'instances' (row "
            "format) is only accepted in JSON"
        )
    if "instances" not in body and "inputs" not in body:
        raise InvalidInput(
            "The request is missing 'instances' (row format) or 'inputs' (columnar format)"
        )
    name = body.get("signature_name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput(f"'signature_name' must be a string, got {type(name).__name__}")


def _numbers_only(body) -> bool:
    """Whether a predict body's ``instances`` (the one tensor ``fast`` is asked about) were
    read by the fast parse."""
    return type(body) is dict and type(body.get("instances")) is JsonNumbers


def _has_bool_token(raw: bytes) -> bool:
    """Whether ``raw`` may hold a JSON ``true`` or ``false`` (a byte search for "u" and "l"
    costs a fraction of one for the words)."""
    return (b"u" in raw and b"true" in raw) or (b"l" in raw and b"false" in raw)


def _timeout(header, field) -> float | None:
    given = [
        t
        for t in (
            parse_timeout(header, "The Request-Timeout header"),
            parse_timeout(field, "'timeout'"),
        )
        if t is not None
    ]
    return min(given) if given else None


def _sole_input(signature, where: str) -> str:
    if len(signature.inputs) != 1:
        raise InvalidInput(
            f"signature '{signature.key}' has {len(signature.inputs)} inputs "
            f"{signature.input_order}, so {where} must be an object naming "
            "them"
        )
    return signature.input_order[0]


def _is_b64(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "b64" in value


def _is_named(value) -> bool:
    return isinstance(value, dict) and not _is_b64(value)


def _row_inputs(instances, signature, fast: bool = False) -> dict[str, np.ndarray]:
    if type(instances) is JsonNumbers:  # numbers, read as such (service.protocols.json_numbers)
        alias = _sole_input(signature, "each instance")
        arr = _json_numbers(instances, signature.inputs[alias]) if fast else None
        if arr is not None:
            return {alias: arr}
        instances = instances.tolist()
    if not isinstance(instances, list):
        raise InvalidInput(
            f"'instances' must be a list with one element per instance, got "
            f"{type(instances).__name__}"
        )
    if not instances:
        raise InvalidInput("'instances' is empty; send at least one instance")
    if _is_named(instances[0]):
        names = set(instances[0])
        for i, instance in enumerate(instances):
            if not _is_named(instance) or set(instance) != names:
                got = sorted(instance) if _is_named(instance) else "a bare value"
                raise InvalidInput(
                    f"instance {i} has inputs {got} but instance 0 has "
                    f"{sorted(names)}; every instance must name the same inputs"
                )
        columns = {a: [instance[a] for instance in instances] for a in names}
    else:
        alias = _sole_input(signature, "each instance")
        for instance in instances:
            if _is_named(instance):
                raise InvalidInput("'instances' mixes objects naming inputs with bare values")
        return {alias: _stack(alias, instances, signature if fast else None)}
    return {a: _stack(a, values, signature if fast else None) for a, values in columns.items()}


def _stack(alias: str, values: list, signature=None) -> np.ndarray:
    spec = signature.inputs.get(alias) if signature is not None else None
    if spec is not None and spec.dtype.base_dtype.name != "string":
        # Numbers and bools hold no {"b64": ...} values: convert all instances at once
        # (straight to the input's dtype when it is a float type). Anything irregular
        # falls through to the per-instance path for a precise message.
        arr = float_array(values, spec.dtype)
        if arr is not None:
            return arr
        try:
            return from_json_value(values, f"input '{alias}'")
        except InvalidInput:
            pass
    arrays = [_to_array(v, f"input '{alias}' of instance {i}") for i, v in enumerate(values)]
    first = arrays[0]
    for i, arr in enumerate(arrays):
        if arr.shape != first.shape:
            raise InvalidInput(
                f"input '{alias}': instance {i} has shape {list(arr.shape)} but "
                f"instance 0 has shape {list(first.shape)}; every instance must "
                "give an input the same shape"
            )
        if _kind(arr) != _kind(first):
            raise InvalidInput(
                f"input '{alias}': instance {i} holds {_kind(arr)} but instance "
                f"0 holds {_kind(first)}"
            )
    return np.stack(arrays)


def _kind(arr: np.ndarray) -> str:
    return {"O": "strings", "b": "bools"}.get(arr.dtype.kind, "numbers")


def _columnar_inputs(inputs, signature) -> dict[str, np.ndarray]:
    if _is_named(inputs):
        return {a: _column(a, v, signature) for a, v in inputs.items()}
    alias = _sole_input(signature, "'inputs'")
    return {alias: _column(alias, inputs, signature)}


def _column(alias: str, value, signature) -> np.ndarray:
    spec = signature.inputs.get(alias)
    if type(value) is JsonNumbers:
        arr = _json_numbers(value, spec) if spec is not None else None
        if arr is not None:
            return arr
        value = value.tolist()
    if spec is not None and isinstance(value, list):
        arr = float_array(value, spec.dtype)  # numbers for a float input: one conversion
        if arr is not None:
            return arr
    return _to_array(value, f"input '{alias}'")


def _json_numbers(value: JsonNumbers, spec) -> np.ndarray | None:
    """What ``_stack`` and ``_column`` make of ``value.tolist()`` for ``spec``, where that is
    ``float_array``'s array (float32, float64) or ``from_json_value``'s integers (an
    integer type); None where the list path must decide."""
    dtype = spec.dtype.base_dtype
    arr = value.integers() if dtype.is_integer else value.floats(dtype.np)
    if arr is not None:
        value.release()
    return arr


def _msgpack_inputs(inputs, signature, max_elements: int) -> dict[str, np.ndarray]:
    if is_tensor_map(inputs):
        alias = _sole_input(signature, "'inputs'")
        return {alias: decode_tensor(inputs, f"input '{alias}'", max_elements)}
    if not isinstance(inputs, dict) or not all(isinstance(a, str) for a in inputs):
        raise InvalidInput(
            "'inputs' must be a tensor map {dtype, shape, data} or a map from "
            "input names to tensor maps"
        )
    return {a: decode_tensor(v, f"input '{a}'", max_elements) for a, v in inputs.items()}


def _to_array(value, what: str) -> np.ndarray:
    return from_json_value(_decode_b64(value, what), what)


def _decode_b64(value, what: str, depth: int = 0):
    """``value`` with every ``{"b64": ...}`` object replaced by the bytes it encodes."""
    if _is_b64(value):
        text = value["b64"]
        if not isinstance(text, str):
            raise InvalidInput(f'{what}: a {{"b64": ...}} value must be a base64 string')
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput(f"{what}: {text[:40]!r} is not valid base64") from None
    if not isinstance(value, list):
        return value
    if depth > _MAX_DEPTH:
        raise InvalidInput(f"{what}: nested more than {_MAX_DEPTH} levels deep")
    leaf = value
    while isinstance(leaf, list) and leaf:
        leaf = leaf[0]
    if not isinstance(leaf, (dict, str)):  # numbers and bools: nothing to decode, skip the walk
        return value
    return [_decode_b64(v, what, depth + 1) for v in value]


# -- responses ------------------------------------------------------------------------------
def _predictions(outputs: dict[str, np.ndarray]) -> list:
    if len(outputs) == 1:  # the common case: the output's value is the list of predictions
        ((alias, arr),) = outputs.items()
        if arr.ndim:
            return _to_json(arr, alias)
    batch, first = None, None
    for alias, arr in outputs.items():
        if arr.ndim == 0:
            raise InvalidInput(
                f"output '{alias}' has no batch dimension (it is a scalar), so "
                "it cannot be returned per instance; send the request in "
                "columnar format ('inputs') instead of 'instances'"
            )
        if batch is None:
            batch, first = arr.shape[0], alias
        elif arr.shape[0] != batch:
            raise InvalidInput(
                f"outputs '{first}' and '{alias}' have different batch sizes "
                f"({batch} and {arr.shape[0]}), so they cannot be returned per "
                "instance; send the request in columnar format ('inputs') "
                "instead of 'instances'"
            )
    values = {a: _to_json(v, a) for a, v in outputs.items()}
    if len(values) == 1:
        return next(iter(values.values()))
    return [{a: v[i] for a, v in values.items()} for i in range(batch)]


def _to_json(arr: np.ndarray, alias: str):
    if arr.dtype.kind != "O":
        return arr  # written by ``dumps`` (orjson's numpy support)
    force_b64 = alias.endswith("_bytes")
    flat = np.empty(arr.size, dtype=object)
    flat[:] = [_string_json(v, force_b64) for v in arr.reshape(-1)]
    return flat.reshape(arr.shape).tolist()


def _string_json(value, force_b64: bool):
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if not force_b64:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {"b64": base64.b64encode(data).decode("ascii")}


def _tensor_info(spec) -> dict:
    dims = spec.dims
    name = spec.dtype.base_dtype.name
    shape = (
        {"dim": [], "unknown_rank": True}
        if dims is None
        else {
            "dim": [{"size": str(-1 if d is None else d), "name": ""} for d in dims],
            "unknown_rank": False,
        }
    )
    return {
        "dtype": _DT_NAMES.get(name, "DT_" + name.upper()),
        "tensor_shape": shape,
        "name": spec.tensor_name,
    }
