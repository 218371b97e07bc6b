"""A lead's adjudication (filled in as its modules move here).

- queue: the adjudication queue, most serious disagreement first
"""
