"""Token usage: what a model call reports and what turns and sessions add up."""

from __future__ import annotations

import msgspec


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens of one model call, or a sum of them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )
