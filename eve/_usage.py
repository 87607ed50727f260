"""Token usage: what a model call reports and what turns and sessions add up."""

from __future__ import annotations

import msgspec


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Tokens of one model call, or a sum of them, by how the provider bills them.

    The kinds do not overlap on the input side: ``input_tokens`` are the ones billed at the
    full input price, besides those read from the prompt cache (``cache_read_tokens``) and
    those written to it (``cache_write_tokens``). ``reasoning_tokens`` are part of
    ``output_tokens``, reported apart because they are never shown. A kind that is 0 is left
    out of the JSON (as the cache and reasoning kinds were before eve reported them).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        """Every input token of the request, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )
