"""What every app stands on: model rows by fixed SQL (sql) and the text a database can store (storable)."""
