"""WorkItem and Notification join the run state they belong to. Their tables keep their names, so only
Django's picture of the models moves: no table, index or row is touched."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('work', '0004_item_assigned_one_way'),
        ('accounts', '0002_default_organization'),
        ('runs', '0007_steps_overdue_now'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='WorkItem',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(max_length=16)),
                        ('state', models.CharField(choices=[('open', 'Open'), ('decided', 'Decided'), ('removed', 'Removed')], default='open', max_length=16)),
                        ('assigned_person', models.CharField(blank=True, max_length=254, null=True)),
                        ('for_operators', models.BooleanField(default=False)),
                        ('escalation', models.JSONField(blank=True, null=True)),
                        ('created_at', models.DateTimeField()),
                        ('decision', models.CharField(blank=True, max_length=16, null=True)),
                        ('decided_by', models.CharField(blank=True, max_length=64, null=True)),
                        ('decided_at', models.DateTimeField(blank=True, null=True)),
                        ('assigned_group', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='accounts.group')),
                        ('assigned_user', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('organization', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='work_items', to='accounts.organization')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='work_items', to='runs.run')),
                        ('step', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='work_items', to='runs.runstep')),
                    ],
                    options={
                        'db_table': 'work_workitem',
                        'ordering': ['created_at', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='Notification',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('step_id', models.CharField(max_length=64)),
                        ('kind', models.CharField(max_length=32)),
                        ('text', models.TextField()),
                        ('created_at', models.DateTimeField()),
                        ('read_at', models.DateTimeField(blank=True, null=True)),
                        ('email_pending', models.BooleanField(default=False)),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.run')),
                        ('user', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='notifications', to=settings.AUTH_USER_MODEL)),
                        ('work_item', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.workitem')),
                    ],
                    options={
                        'db_table': 'work_notification',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AddIndex(
                    model_name='workitem',
                    index=models.Index(fields=['assigned_group', 'state', 'created_at'], name='item_group_open'),
                ),
                migrations.AddIndex(
                    model_name='workitem',
                    index=models.Index(fields=['assigned_user', 'state', 'created_at'], name='item_user_open'),
                ),
                migrations.AddIndex(
                    model_name='workitem',
                    index=models.Index(fields=['organization', 'state', 'for_operators', 'created_at'], name='item_ops_inbox'),
                ),
                migrations.AddConstraint(
                    model_name='workitem',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('assigned_group__isnull', True), ('assigned_user__isnull', False), ('for_operators', False)), models.Q(('assigned_group__isnull', False), ('assigned_user__isnull', True), ('for_operators', False)), models.Q(('assigned_group__isnull', True), ('assigned_user__isnull', True), ('for_operators', True)), _connector='OR'), name='item_assigned_one_way'),
                ),
                migrations.AddIndex(
                    model_name='notification',
                    index=models.Index(fields=['user', '-created_at', '-id'], name='notice_user_newest'),
                ),
                migrations.AddIndex(
                    model_name='notification',
                    index=models.Index(condition=models.Q(('read_at__isnull', True)), fields=['user'], name='notice_user_unread'),
                ),
                migrations.AddIndex(
                    model_name='notification',
                    index=models.Index(condition=models.Q(('email_pending', True)), fields=['id'], name='notice_email_owed'),
                ),

            ],
            database_operations=[],
        ),
    ]
