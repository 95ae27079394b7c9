"""Whether a failed upload failed on what the file holds, so that Retry is offered only
where it can help. Uploads that failed before the field existed are told apart once, by
the three messages a failure not of the file's making writes (a refused write, an internal
error, a job given up by the reaper); every other failure was the parser's."""

from django.db import migrations, models
from django.db.models import Q

NOT_CONTENT = (
    "internal error while reading the file",
    "the database refused a write",
    "The job stopped making progress",
)


def backfill(apps, schema_editor):
    Upload = apps.get_model("ingest", "Upload")
    other = Q()
    for marker in NOT_CONTENT:
        other |= Q(error_message__contains=marker)
    Upload.objects.filter(status="failed").exclude(other).update(failed_on_content=True)


class Migration(migrations.Migration):
    dependencies = [("ingest", "0012_keyboard_labels_without_reason")]

    operations = [
        migrations.AddField(
            model_name="upload",
            name="failed_on_content",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
