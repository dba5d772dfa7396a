"""Carriers: where a manifest travels (standalone file, Delta properties, Iceberg summaries)."""
