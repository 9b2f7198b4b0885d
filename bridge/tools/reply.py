"""The answer every tool gives, apart from `Bridge` so the faces and the mixins share it."""

from __future__ import annotations

from dataclasses import dataclass

import mcp_types as types
from pydantic import BaseModel

from bridge.errors import ErrorResult
from bridge.tools import output


@dataclass(frozen=True)
class Reply:
    """What a tool answers: text for the model and the structured content behind it; blocks that
    pass through as they came (images, audio, resource links); or what the host must answer first."""

    text: str
    data: BaseModel
    blocks: tuple[output.Passed, ...] = ()
    input_required: types.InputRequiredResult | None = None

    @property
    def is_error(self) -> bool:
        return isinstance(self.data, ErrorResult)

