from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce


def count_existing_evidence(apps, schema_editor):
    """Cases imported before the field: the evidence rows they still have (one whose passage
    was deleted since cannot be told apart any more)."""
    Case = apps.get_model("annotate", "Case")
    Evidence = apps.get_model("annotate", "Evidence")
    counts = (
        Evidence.objects.filter(case=OuterRef("pk"))
        .order_by()
        .values("case")
        .annotate(n=Count("pk"))
        .values("n")
    )
    Case.objects.update(evidence_named=Coalesce(Subquery(counts), 0))


class Migration(migrations.Migration):
    dependencies = [
        ("annotate", "0004_label_schema_and_reference"),
    ]

    operations = [
        migrations.AddField(
            model_name="case",
            name="evidence_named",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.RunPython(count_existing_evidence, migrations.RunPython.noop),
    ]
