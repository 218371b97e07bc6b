"""Single sign-on with OpenID Connect (mozilla-django-oidc), off unless configured (README.md,
"Single sign-on"). Not a Django app: no models, no templates of its own.

One module per capability:
- mapping: the CLAIMDESK_OIDC_ROLES setting read and checked (pure: settings.py uses it), and
  which roles a person's claims grant
- roles: those roles written to the person's memberships at each login (sync_roles)
- provider: the provider's endpoints, from the settings or its discovery document
- backend: the authentication backend: who a signed-in person is, accounts made on first login
- views: the login page (password form and/or the provider's button), the admin's login, the
  start of a login at the provider, its return, and logout
"""
