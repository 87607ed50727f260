"""A process's ``/proc/<pid>/stat`` line split into its fields (Linux, proc(5)).

The second field is the command's name in parentheses, and that name may itself hold spaces
and ``)``: the fields after it are found from the line's last ``)``, never by splitting the
whole line.
"""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int | str) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command's name: index 0 is proc(5)'s
    field 3 (the state), so field ``n`` is at ``n - 3``. ``pid`` may be ``"self"``. Raises
    ``OSError`` when the file cannot be read (the process is gone, or there is no
    ``/proc``)."""
    line = Path(f"/proc/{pid}/stat").read_bytes()
    return line.rsplit(b")", 1)[1].split()
