"""Who the caller is: a tenant's key or an admin key (the console shows admin pages only to the latter)."""

from __future__ import annotations

from typing import Any

from flask import g
from marshmallow import Schema, fields, validate

from gateway.auth import key_required
from gateway.blueprint import Blueprint
from gateway.services import services
from shared.models import KeyRole, Tenant

blp = Blueprint("whoami", __name__, description="The caller's own key")


class WhoAmISchema(Schema):
    role = fields.String(required=True, validate=validate.OneOf([r.value for r in KeyRole]))
    tenant_id = fields.String(allow_none=True, metadata={"description": "null for an admin key"})
    tenant_name = fields.String(allow_none=True)


@blp.route("/v1/whoami", methods=["GET"])
@key_required
@blp.response(200, WhoAmISchema)
def whoami() -> Any:
    """The role of the key that sent the request (admin or tenant) and its tenant, if any."""
    caller = g.caller
    name = None
    if caller.tenant_id is not None:
        with services().db.transaction() as session:
            tenant = session.get(Tenant, caller.tenant_id)
            name = tenant.name if tenant is not None else None
    return {"role": caller.role, "tenant_id": caller.tenant_id, "tenant_name": name}
