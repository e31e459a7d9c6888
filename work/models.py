"""The people's pages keep no tables of their own: work items and notices are run state (runs.models)."""
