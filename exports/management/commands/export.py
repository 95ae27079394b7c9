"""``manage.py export``: the former name of ``repair_export``, kept so scripts keep working."""

from __future__ import annotations

from exports.management.commands.repair_export import Command as RepairExportCommand


class Command(RepairExportCommand):
    help = "Former name of repair_export: " + RepairExportCommand.help
