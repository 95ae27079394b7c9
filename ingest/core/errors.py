"""The one error type parsers raise: it names the file, the record and the field."""

from __future__ import annotations


class TraceParseError(ValueError):
    """A source file cannot be read as the format it claims to be.

    Example:
        >>> str(TraceParseError("Field is required.", file="a.jsonl", record="line 3", field="steps"))
        'a.jsonl, line 3, field steps: Field is required.'
    """

    def __init__(self, message: str, *, file: str = "", record: str = "", field: str = "") -> None:
        self.message = message
        self.file = file
        self.record = record
        self.field = field
        super().__init__(self.__str__())

    def with_file(self, file: str) -> TraceParseError:
        return TraceParseError(self.message, file=file, record=self.record, field=self.field)

    def __str__(self) -> str:
        where = ", ".join(
            part
            for part in (
                self.file,
                self.record,
                f"field {self.field}" if self.field else "",
            )
            if part
        )
        return f"{where}: {self.message}" if where else self.message
