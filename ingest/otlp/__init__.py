"""The OTLP/HTTP trace receiver: a running agent's OpenTelemetry exporter posts spans to
``/v1/traces`` (views), they are stored at once (services.spans_receive) and assembled
into rollouts by Celery tasks (ingest.tasks). The protocol and the span-to-rollout rules
are pure code in ingest.core.otlp_receive and ingest.core.otlp_trace."""
