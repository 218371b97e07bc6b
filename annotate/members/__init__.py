"""People: who is in a project and in which role, and a person's own login.

- services: adding someone (add_member, add_project_member), importing a CSV of members
  (import_members), changing a role, removing someone, the permission to add anyone; a
  project keeps at least one lead
- tokens: API tokens (knox), and the API's token authentication
- views, forms: the members page; token_views: a person's API token page;
  account_views: the login page's answer to a locked-out login (django-axes)
"""
