"""The gateway's request counter keeps a bounded set of series whatever clients send: a method
outside HTTP's standard set counts as `other`, a path that matches no route as `unmatched`, and
such a request gets its problem answer (404, 405), not a 500."""

from __future__ import annotations

from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from shared.metrics import HTTP_METHODS

# Methods a probe might send: made-up words, and one 5,000 characters long.
ODD_METHODS = [f"PROBEMETHOD{n}" for n in range(20)] + ["brew", "X" * 5000]


def _series(app: Flask) -> set[tuple[str, str, str]]:
    """The (method, route, status) label sets of ingest_http_requests_total now."""
    text = app.test_client().get("/metrics").get_data(as_text=True)
    return {
        (sample.labels["method"], sample.labels["route"], sample.labels["status"])
        for family in text_string_to_metric_families(text)
        if family.name == "ingest_http_requests"
        for sample in family.samples
        if sample.name == "ingest_http_requests_total"
    }


def test_odd_methods_and_unmatched_paths_add_one_series_each(app: Flask) -> None:
    # Given a gateway, and the series its request counter has
    client = app.test_client()
    before = _series(app)

    # When keyless clients send made-up methods to a route and to nowhere, and GETs to 40 paths
    # that match no route
    answers = [client.open("/v1/jobs", method=method).status_code for method in ODD_METHODS]
    answers += [client.open(f"/nothing/{n}", method=odd).status_code for n, odd in enumerate(ODD_METHODS)]
    answers += [client.get(f"/nothing-here/{n}").status_code for n in range(40)]
    added = _series(app) - before

    # Then each is a 405 or 404 problem, never a 500
    assert set(answers) == {404, 405}
    assert client.open("/v1/jobs", method="PROBEMETHOD0").get_json()["code"] == "method_not_allowed"

    # And the counter gained one series for each kind of answer, under bounded labels
    assert added <= {
        ("other", "unmatched", "405"),
        ("other", "unmatched", "404"),
        ("GET", "unmatched", "404"),
        ("GET", "/metrics", "200"),
    }, added
    assert {method for method, _, _ in _series(app)} <= HTTP_METHODS | {"other"}
