"""The REST API v1 (django-ninja): served at /api/v1/, its OpenAPI 3 schema at
/api/v1/openapi.json and browsable docs at /api/v1/docs. docs/api.md says why ninja and
how to use it; ``urls`` mounts it."""
