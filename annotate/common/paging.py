"""One page of a long per-case table, with the links to its neighbours.

Report pages show aggregates first and their case-by-case tables a page at a time, so a page's
HTML does not grow with the project; the full tables are CSV downloads. Links keep every other
query parameter (filters, the variant pair, k), so each page is an ordinary GET URL that works
without JavaScript, and htmx fetches the same URL for the table's partial.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.http import QueryDict


@dataclass
class Pager:
    items: list[Any]
    number: int
    num_pages: int
    count: int
    first: int  # 1-based position of the first item shown (0 when there is none)
    last: int
    previous_url: str
    next_url: str

    @property
    def several(self) -> bool:
        return self.num_pages > 1


def paginate(
    items: Sequence[Any], query: QueryDict, *, per_page: int, param: str = "page", anchor: str = ""
) -> Pager:
    """The page of ``items`` that ``query[param]`` names (the first, or the last, when it names
    none or too many), with query-string links to the previous and next pages."""
    page = Paginator(items, per_page).get_page(query.get(param))

    def url(number: int) -> str:
        params = query.copy()
        params[param] = str(number)
        return f"?{params.urlencode()}{anchor}"

    return Pager(
        items=list(page.object_list),
        number=page.number,
        num_pages=page.paginator.num_pages,
        count=page.paginator.count,
        first=page.start_index(),
        last=page.end_index(),
        previous_url=url(page.previous_page_number()) if page.has_previous() else "",
        next_url=url(page.next_page_number()) if page.has_next() else "",
    )
