"""The annotate app's computed reports (annotate.common.computed), all derived in the request
and kept in each process's memory: the adjudication queue and the gold page's counts read one
pair summary, built from per-answer shares that are also stored (annotate.gold.selectors);
the blinding check reads no label, so it is kept under the content revision."""

from __future__ import annotations

from annotate import tasks  # noqa: F401  (registers the worker's refresh task)
from annotate.common import computed

QUEUE = "adjudication-queue"
QUEUE_DECIDED = "adjudication-decided"  # the queue's "N of M decided"
PAIR_SHARES = "pair-shares"
PAIR_SUMMARY = "pair-summary"
IMPORTED_ALONE = "imported-alone"
BLINDING = "blinding-check"
DECIDED_ANSWERS = "decided-answers"  # the answers a lead may mark as gold checks

computed.register(QUEUE)
computed.register(QUEUE_DECIDED)
computed.register(PAIR_SUMMARY)
computed.register(DECIDED_ANSWERS)
computed.register(IMPORTED_ALONE)
# Each share carries its answer's revision, checked answer by answer.
computed.register(PAIR_SHARES, scope=computed.ANSWER)
computed.register(BLINDING, scope=computed.CONTENT)
