"""The base of every config section: strict pydantic models.

Unknown keys are errors (a typo is never silently ignored), values are not
coerced across types (``"2"`` is not an int), no float is infinite or NaN, and a parsed config
is frozen.
"""
from pydantic import BaseModel, ConfigDict

__all__ = ["Section"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)
