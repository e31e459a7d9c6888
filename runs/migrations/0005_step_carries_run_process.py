"""Each step row carries its run's process name, version and mode, which never change.

The look for ready work then reads the steps alone. The new columns are filled from the runs.
"""

import django.db.models.deletion
from django.db import migrations, models

FILL = """
UPDATE runs_runstep SET
    process_name = (SELECT r.process_name FROM runs_run r WHERE r.id = runs_runstep.run_id),
    version_id = (SELECT r.version_id FROM runs_run r WHERE r.id = runs_runstep.run_id),
    mode = (SELECT r.mode FROM runs_run r WHERE r.id = runs_runstep.run_id)
"""


class Migration(migrations.Migration):

    dependencies = [
        ('processes', '0001_initial'),
        ('runs', '0004_leaner_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='runstep',
            name='process_name',
            field=models.CharField(default='', max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name='runstep',
            name='version',
            field=models.ForeignKey(
                db_constraint=False, db_index=False, default=0,
                on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='processes.processversion',
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name='runstep',
            name='mode',
            field=models.CharField(choices=[('live', 'Live'), ('test', 'Test')], default='live', max_length=8),
            preserve_default=False,
        ),
        migrations.RunSQL(FILL, reverse_sql=migrations.RunSQL.noop),
    ]
