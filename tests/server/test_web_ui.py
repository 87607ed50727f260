"""The dev UI's files as ``eve serve`` answers them: public while the API needs its token,
each with its content type and a strict Content-Security-Policy, nothing from elsewhere, and
all of it under the page-weight budget."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch

from bench.ui import UI_DIR, WEIGHT_BUDGET_BYTES, ui_weight
from eve.server.web_ui import CONTENT_SECURITY_POLICY, UI_FILES
from tests.conftest import REPO_ROOT, AppFactory
from tests.sessions.inprocess import InProcessServer

TOKEN = "web-ui-test-token-0123456789abcdefghij"


def test_the_ui_is_public_strict_and_typed_while_the_api_needs_the_token(
    make_app: AppFactory,
) -> None:
    server = InProcessServer(make_app(), env={"EVE_API_TOKEN": TOKEN}, token=TOKEN).start()
    try:
        http = server._client()
        index = http.get("/")
        assets = {name: http.get(f"/ui/{name}") for name in UI_FILES if name != "index.html"}
        missing = http.get("/ui/secrets.py")
        escaping = http.get("/ui/../eve/v1/sessions")
        api_without_token = http.get("/eve/v1/sessions")
        api_with_token = server.get("/sessions")
    finally:
        server.stop()
    for name, response in {"index.html": index, **assets}.items():
        assert response.status_code == 200, name
        assert response.headers["content-type"] == UI_FILES[name], name
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.content == (UI_DIR / name).read_bytes()
    policy = dict(part.split(" ", 1) for part in CONTENT_SECURITY_POLICY.split("; "))
    assert policy["script-src"] == policy["style-src"] == policy["connect-src"] == "'self'"
    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert missing.status_code == 404
    assert escaping.status_code in (401, 404)  # never a file from outside ui/
    assert api_without_token.status_code == 401
    assert api_with_token.status_code == 200


def test_the_ui_loads_nothing_from_elsewhere_and_uses_no_inline_code() -> None:
    for name in UI_FILES:
        text = (UI_DIR / name).read_text(encoding="utf-8")
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), name
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text, name
        assert "eval(" not in text and "new Function" not in text, name
    index = (UI_DIR / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in index and "<style" not in index and " style=" not in index
    # relative URLs only, so the UI works wherever eve is mounted
    assert not re.search(r"""(src|href)="/""", index)
    for name in UI_FILES:
        assert not re.search(r"""["'`]/eve/v1""", (UI_DIR / name).read_text(encoding="utf-8"))


def test_every_ui_file_is_served_packaged_and_under_the_weight_budget() -> None:
    on_disk = {path.name for path in UI_DIR.iterdir() if path.is_file()}
    assert on_disk == set(UI_FILES)
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["eve"]
    for name in on_disk:
        assert any(fnmatch(f"server/ui/{name}", pattern) for pattern in patterns), name
    assert sum(ui_weight().values()) <= WEIGHT_BUDGET_BYTES
