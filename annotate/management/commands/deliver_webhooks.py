from django.core.management.base import BaseCommand

from annotate.webhooks.tasks import send_due


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "Queue every webhook delivery whose time has come: the retries of CLAIMDESK_TASKS="
        "immediate (sent here, since that backend cannot defer a task), and with a worker what "
        "a lost task or a dead worker left behind. Run it every minute or so from cron."
    )

    def handle(self, *args, **options):
        due = send_due()
        self.stdout.write(f"{due} webhook deliver{'y' if due == 1 else 'ies'} due, queued.")
