"""A project before and around labelling: creating it, setting it up, opening it.

- creation: who may create a project under which slug, and the import that creates it
  (import_new_project, import_as_new_project, check_new_slug)
- access: who may create projects and add anyone to one (the permissions and the setting),
  and the decorator of the new-project page
- services: a project's settings (update_guidelines, which keeps each text as a numbered
  GuidelineVersion; set_label_schema) and the permission
  to create projects (allow_creating_projects)
- boundaries: editing claim boundaries in set-up (split, merge, adjust, cite, accept)
- blinding: what on the labelling screen could tell the variants apart (the set-up check)
- opening: locking the claims and numbering the tasks when labelling opens (open_labelling)
- selectors: one's projects, the set-up dashboard, the boundary editor's answers
- views, forms: the projects list, the set-up dashboard, guidelines, label schema, the
  boundary editor, opening labelling
"""
