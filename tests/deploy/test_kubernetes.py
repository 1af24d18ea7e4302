"""deploy/kubernetes: every core resource validates strictly (kubernetes-validate, offline),
and the manifests agree with the server: probe paths are its health routes, ports and
selectors line up, the pod runs non-root on a read-only root filesystem, and the
termination grace period covers the server's drain."""

import pytest
import yaml

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="kubernetes-validate is not installed (pip install -e .[test])"
)

K8S_VERSION = "1.37.0"


def resources(deploy_dir):
    out = {}
    for path in sorted((deploy_dir / "kubernetes").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            out[doc["kind"]] = doc
    return out


def test_core_resources_validate_strictly(deploy_dir):
    docs = resources(deploy_dir)
    core = ["Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"]
    core.append("PersistentVolumeClaim")
    for kind in core:
        kubernetes_validate.validate(docs[kind], K8S_VERSION, strict=True)


def test_strict_validation_catches_mistakes(deploy_dir):
    bad = resources(deploy_dir)["Deployment"]
    bad["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}  # misspelt
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_manifests_agree_with_the_server(deploy_dir):
    from service.config import SERVER_SETTINGS

    docs = resources(deploy_dir)
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    env = {e["name"]: e["value"] for e in container["env"]}
    known = {"FLOWSERVE_" + name.upper() for name, *_ in SERVER_SETTINGS}
    assert set(env) <= known, set(env) - known
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {
        "http": int(env["FLOWSERVE_PORT"]),
        "grpc": int(env["FLOWSERVE_GRPC_PORT"]),
        "metrics": int(env["FLOWSERVE_METRICS_PORT"]),
    }
    # Security: non-root, read-only root filesystem (with a writable /tmp), no escalation.
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's user
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts[env["FLOWSERVE_MODEL_REPOSITORY"]]["readOnly"] is True and "/tmp" in mounts
    assert container["resources"]["requests"] and container["resources"]["limits"]
    # The drain (preStop sleep + grace period) fits the termination grace period.
    drain = container["lifecycle"]["preStop"]["sleep"]["seconds"] + float(
        env["FLOWSERVE_SHUTDOWN_GRACE_PERIOD"]
    )
    assert drain < pod["terminationGracePeriodSeconds"]
    # Service, HPA, PDB and monitors select these pods and name these ports.
    labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    service = docs["Service"]["spec"]
    assert service["selector"].items() <= labels.items()
    assert {p["targetPort"] for p in service["ports"]} == set(ports)
    assert docs["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]["name"] == "flowserve"
    assert docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    volumes = {v["name"]: v for v in pod["volumes"]}
    claim = volumes["models"]["persistentVolumeClaim"]["claimName"]
    assert claim == docs["PersistentVolumeClaim"]["metadata"]["name"]


def test_prometheus_operator_monitors(deploy_dir):
    # kubernetes-validate has no schemas for the operator's CRDs: check what they must say.
    docs = resources(deploy_dir)
    service_labels = docs["Service"]["metadata"]["labels"]
    pod_labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    monitor, pod_monitor = docs["ServiceMonitor"], docs["PodMonitor"]
    for doc in (monitor, pod_monitor):
        assert doc["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service_labels.items()
    assert monitor["spec"]["endpoints"][0]["port"] in {
        p["name"] for p in docs["Service"]["spec"]["ports"]
    }
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    container = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert pod_monitor["spec"]["podMetricsEndpoints"][0]["port"] in {
        p["name"] for p in container["ports"]
    }
    for endpoint in monitor["spec"]["endpoints"] + pod_monitor["spec"]["podMetricsEndpoints"]:
        assert endpoint["path"] == "/metrics"
