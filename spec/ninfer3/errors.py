"""The error names the `.ninfer` v3 spec uses, mapped onto our hierarchy (spec/ninfer3.md
§validation).

`ArtifactError` is an **alias** of `WeightfileError` (``ArtifactError is WeightfileError``): the
spec says every contract violation raises `ArtifactError`, a `ValueError` subclass, and every
error our `.ninfer` code raises for bad input is a `WeightfileError` (itself a `ValueError`), so
``except ArtifactError`` catches exactly the contract violations.

The spec also says a missing continuation volume raises `FileNotFoundError` and an existing
output raises `FileExistsError`. `ContinuationMissingError` is both a `MalformedError` (so it
carries a rule id and reports the conformance class ``MalformedError``) and a `FileNotFoundError`;
the writer uses `DestinationExistsError`, which is already a `FileExistsError`.
"""

from __future__ import annotations

from weightfile.spec.errors import (
    MalformedError,
    Violation,
    WeightfileError,
)

#: The spec's name for every contract violation (an alias, not a subclass).
ArtifactError = WeightfileError


class ContinuationMissingError(MalformedError, FileNotFoundError):
    """A continuation volume a range read needs is absent (rule ``ninfer3.part.missing``)."""

    @property
    def violation(self) -> Violation:
        # Conformance reports the closed class name; FileNotFoundError is a Python-side courtesy.
        return Violation(self.rule, self.detail, self.offset, self.path, "MalformedError")
