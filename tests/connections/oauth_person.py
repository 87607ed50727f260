"""The person of an OAuth sign-in, played by a test: opens the link the turn shows, signs in
(the test authorization server approves at once) and follows the redirect back to eve."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx

from eve.events import AuthorizationRequiredData


@dataclass
class Person:
    """Reads ``authorization.required`` and, unless told to stay away, signs in."""

    #: False: sees the link and does nothing (the turn's wait runs out)
    signs_in: bool = True
    seen: list[AuthorizationRequiredData] = field(default_factory=list)
    #: what eve's callback answered each time
    answers: list[int] = field(default_factory=list)
    #: seconds the person takes before following the link
    delay: float = 0.0
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def notify(self, data: AuthorizationRequiredData) -> None:
        self.seen.append(data)
        if self.signs_in:
            # a person acts after the link is shown, not inside the call that shows it
            self._tasks.append(asyncio.create_task(self._sign_in(data.url)))

    async def _sign_in(self, url: str) -> None:
        await asyncio.sleep(self.delay)
        async with httpx.AsyncClient() as browser:
            approved = await browser.get(url)
            assert approved.status_code == 302, approved.text
            back = await browser.get(approved.headers["location"])
            self.answers.append(back.status_code)
