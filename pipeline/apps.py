from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "pipeline"
    verbose_name = "Pipeline"

    def ready(self) -> None:
        # A label's recalibration is a tracked full refresh of the project (pipeline.refresh),
        # not the attribution task alone: attribution cannot import the pipeline above it.
        from attribution.labels import recalibration_request_register
        from pipeline.refresh import label_refresh_request

        recalibration_request_register(label_refresh_request)

        # In a worker: each task records which process runs it, and a worker starting
        # queues again the jobs whose worker died (pipeline.runners).
        from pipeline.runners import runner_signals_connect

        runner_signals_connect()
