"""The one NinjaAPI instance: authentication, error handlers, the routers in the order
their paths must be tried (the rollout sub-resources before a rollout itself, whose
external id may hold "/")."""

from __future__ import annotations

from ninja import NinjaAPI

from dashboard.api import (
    attributions,
    exports,
    feedback,
    misbehaviours,
    projects,
    rollouts,
    uploads,
)
from dashboard.api.auth import ProjectToken
from dashboard.api.docs import OfflineSwagger
from dashboard.api.errors import error_handlers_install
from dashboard.api.query_params import unknown_query_guard_install

API_VERSION = "1"
URL_NAMESPACE = "api_v1"
DESCRIPTION = (
    "Faultline's REST API. Every endpoint takes a project API token as "
    "`Authorization: Bearer <token>`; a missing, wrong, revoked or other project's token "
    "answers 404 (it never tells whether the project exists). Errors are JSON: "
    '`{"error": message, "field": name}`. Lists page by cursor. See docs/api.md.'
)

api = NinjaAPI(
    title="Faultline API",
    version=API_VERSION,
    description=DESCRIPTION,
    auth=ProjectToken(),
    urls_namespace=URL_NAMESPACE,
    docs=OfflineSwagger(),
    docs_url="/docs",
    openapi_url="/openapi.json",
)
ROUTERS = (
    projects.router,
    uploads.router,
    feedback.router,
    attributions.router,
    rollouts.router,
    misbehaviours.router,
    exports.router,
)
error_handlers_install(api)
unknown_query_guard_install(api)
for router in ROUTERS:
    api.add_router("", router)
