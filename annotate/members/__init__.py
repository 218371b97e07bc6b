"""People: who is in a project and in which role (filled in as its modules move here).

- views, forms: the members page
"""
