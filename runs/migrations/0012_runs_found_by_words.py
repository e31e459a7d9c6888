import django.db.models.deletion
from django.db import migrations, models

# The words of a run's document as PostgreSQL indexes them: generated from the document, never written by
# the application (the model does not name it), and a GIN index on it that answers `words @@ 'okaf:*'`.
WORDS = (
    "ALTER TABLE runs_runsearch ADD COLUMN words tsvector"
    " GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, document)) STORED"
)
WORDS_INDEX = "CREATE INDEX run_search_words ON runs_runsearch USING gin (words)"
# The jsonpath look-up of a whole input value it replaces (migration 0010).
INPUTS_INDEX = "CREATE INDEX IF NOT EXISTS run_inputs ON runs_run USING gin ((data -> 'inputs'))"


def index_words(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(WORDS)
        schema_editor.execute(WORDS_INDEX)
        schema_editor.execute("DROP INDEX IF EXISTS run_inputs")


def unindex_words(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS run_search_words")
        schema_editor.execute("ALTER TABLE runs_runsearch DROP COLUMN IF EXISTS words")
        schema_editor.execute(INPUTS_INDEX)


def write_documents(apps, schema_editor):
    """Give every run started before this migration its document."""
    from runs.search import document_of

    Run = apps.get_model("runs", "Run")
    RunSearch = apps.get_model("runs", "RunSearch")
    batch = []
    runs = Run.objects.values_list("pk", "organization_id", "started_at", "process_name", "data").order_by("pk")
    for pk, organization_id, started_at, process_name, data in runs.iterator(chunk_size=2000):
        batch.append(RunSearch(run_id=pk, organization_id=organization_id, started_at=started_at,
                               document=document_of(process_name, data)))
        if len(batch) >= 2000:
            RunSearch.objects.bulk_create(batch)
            batch = []
    RunSearch.objects.bulk_create(batch)


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0004_time_zone_and_email_notices"),
        ("runs", "0011_passages_for_the_operators"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunSearch",
            fields=[
                ("run", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                             related_name="+", serialize=False, to="runs.run")),
                ("started_at", models.DateTimeField()),
                ("document", models.TextField()),
                ("organization", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                                   related_name="+", to="accounts.organization")),
            ],
            options={
                "indexes": [models.Index(fields=["organization", "started_at", "run"], name="run_search_newest")],
            },
        ),
        migrations.RunPython(index_words, unindex_words),
        migrations.RunPython(write_documents, migrations.RunPython.noop),
    ]
