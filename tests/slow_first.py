"""Start the slowest tests first, spread over the workers, so none is left running alone.

pytest-xdist's worksteal scheduler hands each of its W workers one contiguous share of the
collected order (the first ``len // W`` tests to the first, and so on) and only then moves
tests from the longest queue to an idle worker, taking them from that queue's end. Tests
that take most of a minute (a server killed and restarted, a fault held on) therefore
finish last when they sit late in the order, and all land on one worker when they sit
together. This orders each share to begin with its part of the slow tests, dealt longest
first to the share with the least slow time so far, so that they run while the short ones
are stolen around them. It changes which test runs when, never what a test does.
"""

from __future__ import annotations

import os

import pytest

#: seconds a test took in a full run on a loaded machine (tests/ ``--durations``, setup and
#: call): only the ranking matters. A test missing here counts as short; a renamed one
#: simply stops being moved.
SLOW: dict[str, float] = {
    "tests/connections/test_mcp_serve_restart.py::test_an_mcp_tools_approval_parks_across_a_kill_and_runs_once": 58,
    "tests/sessions/test_idempotent_open.py::test_ten_creates_at_once_across_two_workers_open_one_session_once": 37,
    "tests/sessions/test_fault_logs.py::test_a_minute_without_postgres_is_a_few_lines": 34,
    "tests/sessions/test_idle_timeout.py::test_an_idle_session_ends_on_its_timer_across_a_restart": 28,
    "tests/sessions/test_session_summary.py::test_the_totals_survive_a_server_restart": 26,
    "tests/sessions/test_fault_logs.py::test_a_minute_of_full_disk_is_a_few_lines": 26,
    "tests/server/test_followers.py::test_stopping_ends_every_followed_stream_in_one_line": 23,
    "tests/channels/test_ag_ui.py::test_a_tool_call_then_a_plain_answer_with_the_state": 22,
    "tests/connections/test_mcp_dev_exit.py::test_eve_dev_exit_ends_the_servers_it_started": 16,
    "tests/channels/test_ai_sdk.py::test_a_plain_answer": 16,
    "tests/sessions/test_postgres.py::test_survivor_adopts_a_turn_parked_in_a_workflow_tool": 15,
    "tests/server/test_embed_uvicorn.py::test_a_mounted_session_survives_a_killed_host": 14,
    "tests/ui/test_dev_ui.py::test_with_a_token_the_page_asks_for_it_and_keeps_it_out_of_urls": 13,
    "tests/test_install.py::test_the_wheel_installs_and_starts_a_new_app_outside_the_repo": 13,
    "tests/sessions/test_tasks.py::test_a_workflow_tool_asks_a_person_parks_across_a_restart_and_settles": 13,
    "tests/sessions/test_retention.py::test_eve_serve_prunes_at_start_when_eve_retention_is_set": 13,
    "tests/sessions/test_accepted_durable.py::test_postgres_restarts_and_killed_connections_lose_no_accepted_turn": 13,
    "tests/sessions/test_turn_input.py::test_a_turn_queued_with_a_plain_string_still_runs": 12,
    "tests/sessions/test_parked_turns.py::test_a_thousand_parked_sessions_do_not_delay_a_new_one": 12,
    "tests/sessions/test_crash_recovery.py::test_sigkill_mid_tool_then_restart_finishes_the_turn_once": 12,
    "tests/cli/test_dev_cli.py::test_a_second_ctrl_c_quits_while_a_sync_tool_blocks": 12,
    "tests/test_bench_smoke.py::test_the_mcp_call_bench_runs_both_sides": 11,
    "tests/sessions/test_tasks.py::test_a_subagent_session_asks_through_its_caller_and_its_events_are_linked": 11,
    "tests/sessions/test_postgres.py::test_concurrent_sessions_across_two_processes": 11,
    "tests/sessions/test_compaction_http.py::test_a_sigkill_after_a_compaction_does_not_write_the_summary_again": 11,
    "tests/sessions/test_turn_queue.py::test_turns_run_in_the_order_their_messages_were_accepted": 10,
    "tests/sessions/test_serve_workers.py::test_workers_read_the_url_from_database_url_env": 10,
    "tests/sessions/test_crash_recovery.py::test_state_survives_the_crash_into_the_next_turn": 10,
    "tests/server/test_serving.py::test_sigterm_stops_the_server_while_a_client_follows_a_stream": 10,
    "tests/test_docs.py::test_shell_examples_run_against_a_server[http-api.md]": 9,
    "tests/test_bench_smoke.py::test_the_channel_latency_bench_measures_the_native_stream_and_the_custom_probe": 9,
    "tests/sessions/test_idempotency.py::test_the_first_answer_survives_a_killed_server": 9,
    "tests/connections/test_mcp_output_cap.py::test_a_big_mcp_result_is_capped_for_the_model_and_the_store": 9,
    "tests/client/test_client.py::test_a_stream_survives_a_server_restart_without_gap_or_duplicate": 9,
    "tests/channels/test_ag_ui_durability.py::test_a_dropped_connection_resumes_from_the_log": 9,
    "tests/ui/test_dev_ui.py::test_a_server_restart_mid_stream_leaves_no_gap_and_no_duplicate": 8,
    "tests/test_bench_smoke.py::test_the_durability_in_memory_turns_run": 8,
    "tests/sessions/test_postgres.py::test_survivor_adopts_the_turn_of_a_killed_worker": 8,
    "tests/sessions/test_many_sessions.py::test_fifty_concurrent_sessions": 8,
    "tests/sessions/test_compaction_crash.py::test_a_sigkill_during_a_requested_compaction_writes_the_summary_once": 8,
    "tests/connections/test_connections_cli.py::test_info_lists_and_connections_list_connects": 8,
    "tests/cli/test_dev_compact.py::test_compact_folds_the_history_and_the_conversation_goes_on": 8,
    "tests/channels/test_ag_ui_durability.py::test_a_turn_survives_a_server_restart": 8,
    "tests/channels/test_ag_ui.py::test_a_client_without_the_token_is_refused": 8,
    "tests/test_boundaries.py::test_the_opentelemetry_sdk_is_imported_only_where_the_cli_sets_up_a_provider": 7,
    "tests/sessions/test_serve_workers.py::test_a_worker_that_keeps_dying_after_serving_stops_the_server": 7,
    "tests/hooks/test_hooks_recovery.py::test_a_crash_mid_turn_neither_loses_nor_doubles_hook_state": 7,
    "tests/cli/test_dev_cli.py::test_resume_continues_the_last_conversation_with_its_state": 7,
    "tests/cli/test_dev_cli.py::test_ctrl_c_at_an_approval_prompt_cancels_the_turn": 7,
    "tests/ui/test_oidc_login.py::test_signing_in_through_the_issuer_lists_the_sessions_as_that_user": 6,
    "tests/ui/test_dev_ui.py::test_the_sessions_page_lists_new_sessions_without_a_reload": 6,
    "tests/tracing/test_durable_spans.py::test_a_turn_recovered_after_sigkill_traces_completed_steps_once": 6,
    "tests/test_docs.py::test_python_examples_run[tracing.md]": 6,
    "tests/test_docs.py::test_python_examples_run[catalog.md]": 6,
    "tests/sessions/test_turn_queue.py::test_messages_during_a_turn_run_after_it_in_order": 6,
    "tests/sessions/test_storage_growth.py::test_late_turns_add_no_more_bytes_than_early_ones": 6,
    "tests/sessions/test_session_limits.py::test_a_limit_request_waits_across_a_restart_and_is_answered_once": 6,
    "tests/sessions/test_checkpoint_versions.py::test_a_turn_killed_after_its_save_recovers_from_what_it_first_loaded": 6,
    "tests/sessions/test_catalog.py::test_a_catalog_call_parks_as_its_tool_and_runs_once_approved": 6,
    "tests/sessions/test_approvals.py::test_approval_parks_across_a_restart_and_runs_once": 6,
    "tests/sessions/test_approvals.py::test_a_parked_turn_goes_on_after_agent_changes_and_stale_state_is_dropped": 6,
    "tests/client/test_client.py::test_the_async_client_runs_parks_and_cancels": 6,
    "tests/cli/test_dev_cli.py::test_resume_asks_again_what_a_killed_run_was_asking": 6,
    "tests/cli/test_dev_cli.py::test_a_dev_conversation": 6,
    "tests/test_conftest_guard.py::test_the_guard_fires_and_a_mark_opts_out": 5,
    "tests/sessions/test_session_limits.py::test_an_answer_that_is_not_raise_or_end_is_refused": 5,
    "tests/sessions/test_serve_workers.py::test_workers_that_cannot_reach_the_database_stop_the_server": 5,
    "tests/sessions/test_serve_workers.py::test_workers_refuse_when_the_database_url_env_variable_is_unset": 5,
    "tests/sessions/test_serve_workers.py::test_a_worker_that_raises_is_one_redacted_line_and_a_failed_server": 5,
    "tests/sessions/test_postgres.py::test_two_processes_serve_the_same_sessions": 5,
    "tests/sessions/test_postgres.py::test_supervisor_restarts_the_killed_worker_which_finishes_the_turn": 5,
    "tests/server/test_principals.py::test_the_auth_config_tells_the_ui_the_issuer_and_nothing_secret": 5,
    "tests/server/test_every_answer_has_ok.py::test_every_json_answer_of_every_route_has_ok": 5,
    "tests/connections/test_mcp_turns.py::test_catalog_tools_are_searched_and_called_direct_ones_offered": 5,
    "tests/connections/test_lazy_listing.py::test_a_search_of_the_catalog_starts_its_servers_then": 5,
    "tests/cli/test_dev_cli.py::test_resume_after_a_quit_that_left_the_ended_turn_active": 5,
    "tests/cli/test_dev_cli.py::test_dev_asks_to_raise_a_session_limit_then_ends_the_session": 5,
    "tests/cli/test_dev_cli.py::test_dev_asks_a_workflow_tools_question_until_it_gets_an_option": 5,
}


def _shares(count: int, workers: int) -> list[int]:
    """How many tests each worker gets first, as worksteal computes it."""
    sizes: list[int] = []
    for left in range(workers, 0, -1):
        sizes.append((count - sum(sizes)) // left)
    return sizes


def ordered(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """``items`` with each worker's share led by its part of the slow tests."""
    if workers < 2:
        return items  # one process runs them all either way: keep each module together
    sizes = _shares(len(items), workers)
    heads: list[list[pytest.Item]] = [[] for _ in sizes]
    loads = [0.0 for _ in sizes]
    for item in sorted((i for i in items if i.nodeid in SLOW), key=lambda i: -SLOW[i.nodeid]):
        share = min((k for k in range(workers) if len(heads[k]) < sizes[k]), key=loads.__getitem__)
        heads[share].append(item)
        loads[share] += SLOW[item.nodeid]
    rest = iter(i for i in items if i.nodeid not in SLOW)
    result: list[pytest.Item] = []
    for head, size in zip(heads, sizes, strict=True):
        result += head
        result += [next(rest) for _ in range(size - len(head))]
    return result


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # every worker collects and must come to the same order; the controller compares them
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    items[:] = ordered(items, workers)
