"""Marshmallow schemas of requests and responses, one module per feature; they write the OpenAPI document."""
