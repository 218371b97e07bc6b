"""The REST face of claimdesk: DRF serializers and thin views over the same services and
selectors as the pages. Mounted under /api/v1/ by config.api_urls."""
