"""Version 1 of every project that has guidelines: its text as it stands, dated from when it
took that text (the project's audit history; else the project's creation), by whoever saved
it then. Label sets submitted and decisions made before versions were kept are counted as
made under it: it is the only version anyone can show them, and counting them as "no
guidelines" (0) would put every old decision on the re-audit list at once."""

from django.db import migrations


def first_versions(apps, schema_editor):
    Project = apps.get_model("annotate", "Project")
    HistoricalProject = apps.get_model("annotate", "HistoricalProject")
    GuidelineVersion = apps.get_model("annotate", "GuidelineVersion")
    Assignment = apps.get_model("annotate", "Assignment")
    Decision = apps.get_model("annotate", "Decision")
    for project in Project.objects.exclude(guidelines="").only("pk", "guidelines", "created_at"):
        since, author = project.created_at, None
        # Newest first: the records that hold today's text, back to the first of them.
        records = HistoricalProject.objects.filter(id=project.pk).order_by(
            "-history_date", "-history_id"
        )
        for record in records.only("guidelines", "history_date", "history_user_id"):
            if record.guidelines != project.guidelines:
                break
            since, author = record.history_date, record.history_user_id
        GuidelineVersion.objects.create(
            project_id=project.pk,
            number=1,
            text=project.guidelines,
            author_id=author,
            created_at=since,
        )
        Project.objects.filter(pk=project.pk).update(
            guidelines_version=1, guidelines_changed_at=since
        )
        Assignment.objects.filter(project_id=project.pk, status="submitted").update(
            guideline_version=1
        )
        Decision.objects.filter(answer__project_id=project.pk).update(guideline_version=1)


def no_versions(apps, schema_editor):
    apps.get_model("annotate", "GuidelineVersion").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotate", "0020_guideline_versions"),
    ]

    operations = [
        migrations.RunPython(first_versions, no_versions),
    ]
