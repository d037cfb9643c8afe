"""Provenance: a record of what made each file, code versions by content, run headers, and the audit."""
