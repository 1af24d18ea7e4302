"""deploy/kserve: the ServingRuntime and InferenceService validate against KServe's own API
definitions -- the models of the ``kserve`` Python SDK (read as source, never imported: the
SDK pulls a web stack in) -- strictly: unknown fields, wrong types and missing required
fields fail. Embedded Kubernetes types (containers, metadata, ...) validate against
kubernetes-validate's strict Kubernetes schema."""

import ast
import importlib.util
import json
import re
from pathlib import Path

import pytest
import yaml

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="needs kubernetes-validate")
_KSERVE = importlib.util.find_spec("kserve")
pytestmark = pytest.mark.skipif(
    _KSERVE is None,
    reason="the kserve SDK is not installed (.ci/run: pip install --no-deps kserve)",
)


class Models:
    """KServe's OpenAPI models: class name -> (types, json keys, required attributes)."""

    def __init__(self, directory: Path):
        self.classes = {}
        for path in directory.glob("*.py"):
            source = path.read_text()
            for node in ast.parse(source).body:
                if isinstance(node, ast.ClassDef):
                    found = {}
                    for item in node.body:
                        if isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name):
                            name = item.targets[0].id
                            if name in ("openapi_types", "attribute_map"):
                                found[name] = ast.literal_eval(item.value)
                    if "openapi_types" in found:
                        required = set(
                            re.findall(r"Invalid value for `(\w+)`, must not be `None`", source)
                        )
                        self.classes[node.name] = (
                            found["openapi_types"],
                            found["attribute_map"],
                            required & set(found["openapi_types"]),
                        )
        schema_dir = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
        strict = sorted(schema_dir.glob("v*-local-strict"))[-1]
        self.k8s = json.loads((strict / "_definitions.json").read_text())

    def validate(self, value, type_name: str, where: str = "") -> None:
        if type_name.startswith("list["):
            assert isinstance(value, list), f"{where}: expected a list, got {value!r}"
            for i, v in enumerate(value):
                self.validate(v, type_name[5:-1], f"{where}[{i}]")
            return
        if type_name.startswith("dict("):
            assert isinstance(value, dict), f"{where}: expected an object, got {value!r}"
            inner = type_name[5:-1].split(", ", 1)[1]
            for k, v in value.items():
                self.validate(v, inner, f"{where}.{k}")
            return
        scalars = {"str": str, "bool": bool, "int": int, "float": (int, float)}
        if type_name in scalars:
            ok = isinstance(value, scalars[type_name])
            ok = ok and not (type_name in ("int", "float") and isinstance(value, bool))
            assert ok, f"{where}: expected {type_name}, got {value!r}"
            return
        if type_name in self.classes:
            types, keys, required = self.classes[type_name]
            assert isinstance(value, dict), f"{where}: expected a {type_name} object"
            by_key = {k: attr for attr, k in keys.items()}
            unknown = set(value) - set(by_key)
            assert not unknown, f"{where}: {type_name} has no field(s) {sorted(unknown)}"
            missing = {keys[a] for a in required} - set(value)
            assert not missing, f"{where}: {type_name} requires {sorted(missing)}"
            for k, v in value.items():
                self.validate(v, types[by_key[k]], f"{where}.{k}")
            return
        m = re.fullmatch(r"V(\d+)(?:(alpha|beta)(\d+))?([A-Z]\w*)", type_name)
        if m:  # a Kubernetes type: validate with the strict Kubernetes schema
            suffix = f".v{m.group(1)}{m.group(2) or ''}{m.group(3) or ''}.{m.group(4)}"
            keys = sorted(k for k in self.k8s["$defs"] if k.endswith(suffix))
            assert keys, f"{where}: no Kubernetes schema for {type_name}"
            schema = {**self.k8s, "$ref": f"#/$defs/{keys[0]}"}
            try:
                jsonschema.Draft202012Validator(schema).validate(value)
            except jsonschema.ValidationError as e:
                path = ".".join(str(p) for p in e.absolute_path)
                raise AssertionError(f"{where}.{path}: {e.message}") from None
            return
        if type_name == "object":
            return
        raise AssertionError(f"{where}: unknown type {type_name}")


@pytest.fixture(scope="module")
def kserve_models():
    return Models(Path(_KSERVE.submodule_search_locations[0]) / "models")


def load(deploy_dir, name):
    return yaml.safe_load((deploy_dir / "kserve" / name).read_text())


def test_serving_runtime_validates(kserve_models, deploy_dir):
    doc = load(deploy_dir, "servingruntime.yaml")
    assert doc["apiVersion"] == "serving.kserve.io/v1alpha1" and doc["kind"] == "ServingRuntime"
    kserve_models.validate(doc, "V1alpha1ServingRuntime", "ServingRuntime")
    spec = doc["spec"]
    assert spec["protocolVersions"] == ["v2"]
    (container,) = spec["containers"]
    assert container["name"] == "kserve-container"
    assert "--model-repository=/mnt/models" in container["args"]  # KServe's storage mount
    port = container["ports"][0]["containerPort"]
    assert f"--port={port}" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"


def test_inference_service_validates_and_uses_the_runtime(kserve_models, deploy_dir):
    doc = load(deploy_dir, "inferenceservice.yaml")
    runtime = load(deploy_dir, "servingruntime.yaml")
    assert doc["apiVersion"] == "serving.kserve.io/v1beta1" and doc["kind"] == "InferenceService"
    kserve_models.validate(doc, "V1beta1InferenceService", "InferenceService")
    model = doc["spec"]["predictor"]["model"]
    assert model["runtime"] == runtime["metadata"]["name"]
    assert model["modelFormat"]["name"] in {
        f["name"] for f in runtime["spec"]["supportedModelFormats"]
    }
    assert model["protocolVersion"] in runtime["spec"]["protocolVersions"]


def test_the_validator_rejects_mistakes(kserve_models, deploy_dir):
    doc = load(deploy_dir, "inferenceservice.yaml")
    doc["spec"]["predictor"]["model"]["storageURI"] = "s3://x"  # misspelt field
    with pytest.raises(AssertionError, match="storageURI"):
        kserve_models.validate(doc, "V1beta1InferenceService")
    doc = load(deploy_dir, "inferenceservice.yaml")
    del doc["spec"]["predictor"]["model"]["modelFormat"]  # required
    with pytest.raises(AssertionError, match="requires"):
        kserve_models.validate(doc, "V1beta1InferenceService")
    runtime = load(deploy_dir, "servingruntime.yaml")
    runtime["spec"]["containers"][0]["port"] = 8080  # not a Container field
    with pytest.raises(AssertionError, match="port"):
        kserve_models.validate(runtime, "V1alpha1ServingRuntime")
    runtime = load(deploy_dir, "servingruntime.yaml")
    runtime["spec"]["multiModel"] = "no"
    with pytest.raises(AssertionError, match="expected bool"):
        kserve_models.validate(runtime, "V1alpha1ServingRuntime")
