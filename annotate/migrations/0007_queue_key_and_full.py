from django.db import migrations, models
from django.db.models import Count, Q


def fill_queue(apps, schema_editor):
    """Open projects keep their order: queue_key follows the task numbers they already have;
    `full` is counted from the assignments that hold an answer."""
    Project = apps.get_model("annotate", "Project")
    Answer = apps.get_model("annotate", "Answer")
    for project in Project.objects.exclude(state="draft"):
        numbered = list(
            Answer.objects.filter(project=project, task_number__isnull=False)
            .order_by("task_number")
            .values_list("pk", flat=True)
        )
        total = len(numbered) or 1
        full = set(
            Answer.objects.filter(project=project)
            .annotate(n=Count("assignments", filter=~Q(assignments__status="released")))
            .filter(n__gte=project.overlap)
            .values_list("pk", flat=True)
        )
        Answer.objects.bulk_update(
            [
                Answer(pk=pk, queue_key=(i + 0.5) / total, full=pk in full)
                for i, pk in enumerate(numbered)
            ],
            ["queue_key", "full"],
            batch_size=1000,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("annotate", "0006_drop_plaintext_api_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="answer",
            name="full",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="answer",
            name="queue_key",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="answer",
            index=models.Index(
                condition=models.Q(("full", False), ("queue_key__isnull", False)),
                fields=["project", "queue_key"],
                name="answer_open_queue_idx",
            ),
        ),
        migrations.RunPython(fill_queue, migrations.RunPython.noop),
    ]
