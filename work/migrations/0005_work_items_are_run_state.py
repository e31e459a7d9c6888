"""WorkItem and Notification now belong to runs (runs 0008); their tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0008_work_items_are_run_state'),
        ('work', '0004_item_assigned_one_way'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='workitem',
                    name='assigned_group',
                ),
                migrations.RemoveField(
                    model_name='workitem',
                    name='assigned_user',
                ),
                migrations.RemoveField(
                    model_name='workitem',
                    name='organization',
                ),
                migrations.RemoveField(
                    model_name='workitem',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='workitem',
                    name='step',
                ),
                migrations.DeleteModel(
                    name='Notification',
                ),
                migrations.DeleteModel(
                    name='WorkItem',
                ),

            ],
            database_operations=[],
        ),
    ]
