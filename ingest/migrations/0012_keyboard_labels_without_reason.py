"""Keyboard labels saved "Marked decisive from the keyboard." as their reason, which the
misbehaviours then quoted as a diagnosis ("... (diagnosed as “marked decisive from the
keyboard”)"). The keyboard now saves no reason; the ones it wrote are cleared."""

from django.db import migrations

KEYBOARD_REASON = "Marked decisive from the keyboard."


def clear(apps, schema_editor):
    Label = apps.get_model("ingest", "Label")
    Label.objects.filter(source="human", reason=KEYBOARD_REASON).update(reason="")


class Migration(migrations.Migration):
    dependencies = [("ingest", "0011_live_trace_rebuild_wait")]
    operations = [migrations.RunPython(clear, migrations.RunPython.noop)]
