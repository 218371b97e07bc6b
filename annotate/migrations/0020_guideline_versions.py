import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0019_gold_checks'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='project',
            name='guidelines_version',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='historicalproject',
            name='guidelines_version',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='project',
            name='guidelines_changed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='historicalproject',
            name='guidelines_changed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='assignment',
            name='guideline_version',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='historicalassignment',
            name='guideline_version',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='decision',
            name='guideline_version',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.CreateModel(
            name='GuidelineVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('text', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('author', models.ForeignKey(blank=True, help_text='Who saved it; empty for the version made from the text found at migration.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='guideline_versions', to='annotate.project')),
            ],
            options={
                'ordering': ['project_id', 'number'],
                'constraints': [models.UniqueConstraint(fields=('project', 'number'), name='one_guideline_version_a_number')],
            },
        ),
        migrations.CreateModel(
            name='Reaudit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('action', models.CharField(choices=[('keep', 'kept'), ('reopen', 're-opened')], max_length=10)),
                ('guideline_version', models.PositiveIntegerField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('closed_at', models.DateTimeField(blank=True, null=True)),
                ('closed_version', models.PositiveIntegerField(blank=True, null=True)),
                ('answer', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='reaudits', to='annotate.answer')),
                ('created_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='reaudits', to='annotate.project')),
            ],
            options={
                'ordering': ['project_id', 'created_at', 'pk'],
                'indexes': [models.Index(fields=['project', 'action'], name='reaudit_project_idx')],
            },
        ),
    ]
