"""The dashboard stores nothing of its own: it shows what the other apps store.

Its former models (projects, members, the action analysis, the overview, export jobs and
corrections) moved to the apps that own them; dashboard/migrations/0006 removes them
from this app's state without touching their tables.
"""
