"""The metric names a PromQL expression reads (a small tokenizer, enough for our rules and
dashboard: strings, label matchers, grouping clauses and durations are skipped)."""

import re

_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "and",
    "or",
    "unless",
    "inf",
    "nan",
    "atan2",
}


def metric_names(expr: str) -> set[str]:
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings (label values)
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range selectors, subqueries
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = text.replace("$__rate_interval", "1m")
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = m.group(0)
        rest = text[m.end() :].lstrip()
        if rest.startswith("("):
            continue  # a function or aggregation
        if word.lower() in _KEYWORDS:
            continue
        start = m.start()
        if start and (text[start - 1].isdigit() or text[start - 1] == "."):
            continue  # the exponent or unit of a number, e.g. 1e3
        names.add(word)
    return names


def test_metric_names():
    expr = (
        'histogram_quantile(0.99, sum by (model, le) (rate(x_bucket{a="b", c=~"d|e"}[5m])))'
        " / on (model) group_left sum without (v) (y_total) > 0.5 and up == 0"
    )
    assert metric_names(expr) == {"x_bucket", "y_total", "up"}
