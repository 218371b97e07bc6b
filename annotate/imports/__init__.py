"""Everything that brings data in (filled in as the importers move here)."""
