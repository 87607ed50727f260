"""Typed output end to end: compiled (the class's module bound for the runtime), run by
``eve run``, returned by a subagent to its caller, and refused when it cannot be bound."""

from __future__ import annotations

import json

from click.testing import CliRunner

from eve.cli import main
from eve.compiler import compile_to_disk
from eve.compiler.pipeline import compile_agent
from eve.manifest import OutputType
from tests.cli.test_run_cli import eve_run
from tests.conftest import AppFactory

APP = {
    "agent/agent.py": """
        from eve import define_agent
        from agent.lib.shapes import Summary
        default = define_agent(model="offline/script:script.json", output_schema=Summary)
    """,
    "agent/lib/__init__.py": "",
    "agent/lib/shapes.py": """
        import pydantic
        class Summary(pydantic.BaseModel):
            kind: str
            count: int = 0
    """,
    "agent/subagents/counter/agent.py": """
        from eve import define_agent
        default = define_agent(description="Counts things.", output_schema={
            "type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]})
    """,
}

SCRIPT = {
    "__root__": [
        {"tool_calls": [{"name": "counter", "input": {"message": "count"}}]},
        {"tool_calls": [{"name": "eve__final_answer", "input": {"kind": "tally", "count": 2}}]},
    ],
    "counter": [{"tool_calls": [{"name": "eve__final_answer", "input": {"count": 2}}]}],
}


def test_a_typed_answer_through_eve_run_and_a_subagent(make_app: AppFactory) -> None:
    root = make_app(APP)
    (root / "script.json").write_text(json.dumps(SCRIPT))
    compiled = compile_agent(root).manifest
    assert compiled is not None
    config = compiled.nodes["__root__"].config
    assert config.output is not None
    assert config.output.type == OutputType(source_id="lib/shapes.py", qualname="Summary")
    assert compiled.nodes["__root__"].bindings["lib/shapes.py"].usage.runtime_entry
    counter = compiled.nodes["counter"].config.output
    assert counter is not None and counter.type is None  # a JSON Schema: nothing to bind

    done = eve_run(root, "tally", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [delegated] = [
        e["data"] for e in events if e["type"] == "action.result" and e["data"]["name"] == "counter"
    ]
    assert delegated["output"] == '{"count": 2}'  # the subagent's typed answer, as JSON
    [completed] = [
        e for e in events if e["type"] == "turn.completed" and "node_id" not in e["data"]
    ]
    assert completed["data"]["output"] == {"kind": "tally", "count": 2}

    plain = eve_run(root, "tally")
    assert plain.stdout.splitlines()[-1] == '{"kind": "tally", "count": 2}'


def test_an_output_class_the_runtime_cannot_import_is_a_compile_error(
    make_app: AppFactory,
) -> None:
    root = make_app(
        {
            "agent/agent.py": """
                import pydantic
                from eve import define_agent
                def make():
                    class Local(pydantic.BaseModel):
                        x: int
                    return Local
                default = define_agent(model="offline/test", output_schema=make())
            """,
            "agent/subagents/listy/agent.py": """
                from eve import define_agent
                default = define_agent(description="d", output_schema={"type": "array"})
            """,
        }
    )
    result = compile_agent(root)
    found = [(d.code, d.node_id) for d in result.diagnostics.items if d.severity == "error"]
    assert found == [
        ("compile/output-type-invalid", "__root__"),
        ("compile/output-type-invalid", "listy"),
    ]
    messages = " ".join(d.message for d in result.diagnostics.items)
    assert "inside a function" in messages and "must describe an object" in messages


def test_info_shows_the_output_schema_and_run_output_json_prints_only_the_answer(
    make_app: AppFactory,
) -> None:
    root = make_app(APP)
    (root / "script.json").write_text(json.dumps(SCRIPT))
    compile_to_disk(root)
    info = CliRunner().invoke(main, ["-C", str(root), "info"])
    assert "  output: Summary(count, kind)" in info.stdout, info.output
    as_json = json.loads(CliRunner().invoke(main, ["-C", str(root), "info", "--json"]).stdout)
    assert as_json["agent"]["output_schema"]["title"] == "Summary"
    assert as_json["subagents"][0]["output_schema"]["required"] == ["count"]

    done = eve_run(root, "tally", "--output", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"kind": "tally", "count": 2}  # one value, nothing else

    refused = eve_run(root, "tally", "--output", "json", "--json")
    assert refused.returncode == 2 and "pick one" in refused.stderr
