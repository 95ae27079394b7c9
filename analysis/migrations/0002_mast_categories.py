from django.db import migrations


def load_mast(apps, schema_editor):
    from analysis.taxonomy import shipped_modes, upsert_builtins

    upsert_builtins(apps.get_model("analysis", "TaxonomyCategory"), shipped_modes())


def unload_mast(apps, schema_editor):
    apps.get_model("analysis", "TaxonomyCategory").objects.filter(project=None).delete()


class Migration(migrations.Migration):
    dependencies = [("analysis", "0001_initial")]

    operations = [migrations.RunPython(load_mast, unload_mast)]
