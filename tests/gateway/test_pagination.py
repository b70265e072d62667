"""Cursors: every string of the documented form is one, and pages follow each other from it."""

from __future__ import annotations

import io
import re
from datetime import datetime
from typing import Any

import pytest

from gateway.pagination import CURSOR_PATTERN, decode_cursor, encode_cursor, time_position
from shared.errors import InvalidRequestError
from tests.conftest import auth, tenant_key
from tests.support.pdfs import text_pdf

ID = "0b9f4c39-8f5e-4a8e-9d55-2f3c1a6b7e10"


def test_a_cursor_round_trips_a_time_to_the_microsecond() -> None:
    moment = datetime(2026, 12, 7, 9, 30, 1, 123456)
    cursor = encode_cursor(time_position(moment), ID)
    assert re.fullmatch(CURSOR_PATTERN, cursor)
    position, item_id = decode_cursor(cursor)
    assert (position, item_id) == (time_position(moment), ID)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage",
        f"-1_{ID}",
        f"1_{ID.upper()}",
        f"1_{ID}\n",
        f"{'9' * 18}_{ID}",
        "WyIyMDI2LTAxLTAxIiwgImEiXQ",
    ],
)
def test_a_string_not_of_the_cursors_form_is_invalid_cursor(cursor: str) -> None:
    assert not re.fullmatch(CURSOR_PATTERN, cursor)
    with pytest.raises(InvalidRequestError) as refused:
        decode_cursor(cursor)
    assert refused.value.code == "invalid_cursor"


def test_any_cursor_of_the_form_names_a_place_in_the_list(app: Any, client: Any) -> None:
    # Given a tenant with three documents
    key = auth(tenant_key(app, "acme"))
    for n in range(3):
        data = {"file": (io.BytesIO(text_pdf([f"Page {n}."])), f"{n}.pdf")}
        assert client.post("/v1/documents", headers=key, data=data).status_code == 202
    # When it pages two at a time, then the pages hold every document once
    first = client.get("/v1/documents?limit=2", headers=key).get_json()
    second = client.get(f"/v1/documents?limit=2&cursor={first['next_cursor']}", headers=key).get_json()
    ids = [d["document_id"] for d in first["items"] + second["items"]]
    assert len(ids) == len(set(ids)) == 3 and second["next_cursor"] is None
    # And a cursor it made up, later than everything, starts at the newest; one before everything is empty
    late = client.get(f"/v1/documents?cursor={'9' * 17}_{ID}", headers=key).get_json()
    early = client.get(f"/v1/documents?cursor=0_{ID}", headers=key).get_json()
    assert [d["document_id"] for d in late["items"]] == ids and early["items"] == []
    # And an empty cursor is no cursor of the form either
    empty = client.get("/v1/documents?cursor=", headers=key)
    assert (empty.status_code, empty.get_json()["code"]) == (400, "invalid_cursor")
