"""Writes deploy/grafana/dashboards/flowserve.json (run it after editing the panels here).

Every expression names only series flowserve exports; tests/deploy checks that against a
live /metrics scrape and runs the queries on a real Prometheus.
"""

import json
from pathlib import Path

INFER = 'endpoint=~"infer|predict"'
SEL = 'job=~"$job", model=~"$model"'


def rate(metric: str, matchers: str = SEL) -> str:
    return f"rate({metric}{{{matchers}}}[$__rate_interval])"


def quantile(q: str, metric: str, matchers: str = SEL) -> str:
    return f"histogram_quantile({q}, sum by (model, le) ({rate(metric, matchers)}))"


# (title, unit, [(legend, expr)], width)
PANELS = [
    (
        "Inference requests/s",
        "reqps",
        [
            (
                "{{model}}",
                f"sum by (model) ({rate('flowserve_requests_total', f'{SEL}, {INFER}')})",
            )
        ],
        8,
    ),
    (
        "Errors/s by status",
        "reqps",
        [
            (
                "{{model}} {{code}}",
                "sum by (model, code) ("
                + rate("flowserve_requests_total", f'{SEL}, {INFER}, code!~"2.."')
                + ")",
            )
        ],
        8,
    ),
    (
        "Requests/s by endpoint",
        "reqps",
        [
            (
                "{{endpoint}}",
                'sum by (endpoint) (rate(flowserve_requests_total{job=~"$job"}[$__rate_interval]))',
            )
        ],
        8,
    ),
    (
        "Inference latency",
        "s",
        [
            (
                f"p{q} {{{{model}}}}",
                quantile(f"0.{q}", "flowserve_request_duration_seconds_bucket", f"{SEL}, {INFER}"),
            )
            for q in ("50", "95", "99")
        ],
        12,
    ),
    (
        "Batch size (rows per session run)",
        "short",
        [
            (
                "p50 {{model}}",
                quantile("0.5", "flowserve_batch_size_rows_bucket"),
            ),
            (
                "mean {{model}}",
                f"sum by (model) ({rate('flowserve_inference_rows_total')})"
                f" / sum by (model) ({rate('flowserve_model_executions_total')})",
            ),
        ],
        12,
    ),
    (
        "Queue wait p99",
        "s",
        [
            (
                "{{model}}",
                quantile("0.99", "flowserve_batch_queue_wait_seconds_bucket"),
            )
        ],
        8,
    ),
    (
        "Compute time (session run) p99",
        "s",
        [
            (
                "{{model}}",
                quantile("0.99", "flowserve_session_run_seconds_bucket"),
            )
        ],
        8,
    ),
    (
        "In flight / queued",
        "short",
        [
            ("in flight {{model}}", f"sum by (model) (flowserve_requests_in_flight{{{SEL}}})"),
            ("queued {{model}}", f"sum by (model) (flowserve_batch_queue_depth{{{SEL}}})"),
        ],
        8,
    ),
    (
        "Rejected requests/s",
        "reqps",
        [
            (
                "{{model}} {{reason}}",
                f"sum by (model, reason) ({rate('flowserve_requests_rejected_total')})",
            )
        ],
        8,
    ),
    (
        "Model version states",
        "short",
        [
            (
                "{{model}} v{{version}} {{state}}",
                f"max by (model, version, state) (flowserve_model_version_state{{{SEL}}}) == 1",
            )
        ],
        8,
    ),
    (
        "Model loads / unloads / failures (1h)",
        "short",
        [
            (
                "loads {{model}}",
                f"sum by (model) (increase(flowserve_model_loads_total{{{SEL}}}[1h]))",
            ),
            (
                "unloads {{model}}",
                f"sum by (model) (increase(flowserve_model_unloads_total{{{SEL}}}[1h]))",
            ),
            (
                "failures {{model}}",
                f"sum by (model) (increase(flowserve_model_load_failures_total{{{SEL}}}[1h]))",
            ),
        ],
        8,
    ),
    (
        "Process memory",
        "bytes",
        [("{{instance}}", 'sum by (instance) (process_resident_memory_bytes{job=~"$job"})')],
        12,
    ),
    (
        "GPU memory (GPU servers only)",
        "bytes",
        [
            (
                "{{device}} {{kind}}",
                'sum by (device, kind) (flowserve_device_memory_bytes{job=~"$job"})',
            )
        ],
        12,
    ),
]


def panel(i, title, unit, targets, width, x, y):
    return {
        "id": i + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": width, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
        "targets": [
            {"refId": chr(ord("A") + k), "expr": expr, "legendFormat": legend}
            for k, (legend, expr) in enumerate(targets)
        ],
    }


def dashboard():
    panels, x, y = [], 0, 0
    for i, (title, unit, targets, width) in enumerate(PANELS):
        if x + width > 24:
            x, y = 0, y + 8
        panels.append(panel(i, title, unit, targets, width, x, y))
        x += width
    variable = {
        "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "current": {"text": "All", "value": "$__all"},
    }
    return {
        "uid": "flowserve",
        "title": "flowserve",
        "tags": ["flowserve"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {
            "list": [
                {"type": "datasource", "name": "datasource", "query": "prometheus"},
                {**variable, "name": "job", "query": "label_values(flowserve_requests_total, job)"},
                {
                    **variable,
                    "name": "model",
                    "query": 'label_values(flowserve_model_version_state{job=~"$job"}, model)',
                },
            ]
        },
        "panels": panels,
    }


if __name__ == "__main__":
    out = Path(__file__).parent / "dashboards" / "flowserve.json"
    out.write_text(json.dumps(dashboard(), indent=2) + "\n")
