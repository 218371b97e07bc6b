"""API tokens move from DRF's authtoken (the key in clear) to django-rest-knox (a digest).

The old tokens are dropped, not converted. They could be hashed -- the keys are right there
-- but they sat in clear in the database and in every backup of it, so carrying them over
would carry over any copy already taken. Their owners make a new token on /account/token/
(the README and docs/api.md say so). The table goes with them: rest_framework.authtoken is no
longer installed, so nothing else would ever remove it. On a database that never had it
(a new installation) this does nothing."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotate", "0005_case_evidence_named")]

    operations = [
        migrations.RunSQL("DROP TABLE IF EXISTS authtoken_token", migrations.RunSQL.noop),
    ]
