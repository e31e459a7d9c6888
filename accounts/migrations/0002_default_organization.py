from django.db import migrations


def create_default(apps, schema_editor):
    Organization = apps.get_model("accounts", "Organization")
    Organization.objects.get_or_create(slug="default", defaults={"name": "Default organization"})


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]
    operations = [migrations.RunPython(create_default, migrations.RunPython.noop)]
