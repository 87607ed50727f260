"""The JSON that crosses a process boundary as msgspec Structs: the HTTP API's bodies
(``eve.wire.requests``, ``eve.wire.answers``) and a workflow's mailbox (``eve.wire.mailbox``).

A shared module: the server, the session service, both clients and the tests build and read
these, so a body's field names are spelled once.

Internal: a program reads these bodies through ``eve.client`` (``Accepted`` and the rest),
which re-exports what a caller sees.
"""
