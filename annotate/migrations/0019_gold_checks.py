# Gold checks (issue 32): the project's check rate, the flag on a check's assignment, and the
# answers a lead marked as checks.

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0018_webhook_endpoints_and_deliveries'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='project',
            name='check_rate',
            field=models.FloatField(db_default=0, default=0, help_text='Share of tasks served as gold checks, 0 (off) to 1.', validators=[django.core.validators.MinValueValidator(0), django.core.validators.MaxValueValidator(1)]),
        ),
        migrations.AddField(
            model_name='historicalproject',
            name='check_rate',
            field=models.FloatField(db_default=0, default=0, help_text='Share of tasks served as gold checks, 0 (off) to 1.', validators=[django.core.validators.MinValueValidator(0), django.core.validators.MaxValueValidator(1)]),
        ),
        migrations.AddConstraint(
            model_name='project',
            constraint=models.CheckConstraint(condition=models.Q(('check_rate__gte', 0), ('check_rate__lte', 1)), name='check_rate_0_to_1'),
        ),
        migrations.AddField(
            model_name='assignment',
            name='is_check',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.CreateModel(
            name='GoldCheck',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('marked_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('answer', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='gold_checks', to='annotate.answer')),
                ('marked_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='gold_checks', to='annotate.project')),
            ],
            options={
                'ordering': ['project_id', 'marked_at', 'pk'],
                'constraints': [models.UniqueConstraint(fields=('project', 'answer'), name='one_check_per_answer')],
            },
        ),
    ]
