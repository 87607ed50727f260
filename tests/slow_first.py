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

#: seconds a test took, the mean of two full runs on a loaded machine (``--durations``, setup
#: and call): only the ranking matters. A test missing here counts as short; a renamed one
#: simply stops being moved.
SLOW: dict[str, float] = {
    "tests/connections/test_mcp_serve_restart.py::test_an_mcp_tools_approval_parks_across_a_kill_and_runs_once": 59,
    "tests/sessions/test_fault_logs.py::test_a_minute_without_postgres_is_a_few_lines": 45,
    "tests/sessions/test_idempotent_open.py::test_ten_creates_at_once_across_two_workers_open_one_session_once": 44,
    "tests/test_install.py::test_the_wheel_installs_and_starts_a_new_app_outside_the_repo": 41,
    "tests/sessions/test_session_summary.py::test_the_totals_survive_a_server_restart": 33,
    "tests/sessions/test_idle_timeout.py::test_an_idle_session_ends_on_its_timer_across_a_restart": 32,
    "tests/sessions/test_fault_logs.py::test_a_minute_of_full_disk_is_a_few_lines": 31,
    "tests/sessions/test_postgres.py::test_survivor_adopts_a_turn_parked_in_a_workflow_tool": 30,
    "tests/connections/test_mcp_oauth_restart.py::test_a_sign_in_waiting_at_a_crash_is_asked_again_after_the_restart": 29,
    "tests/connections/test_mcp_dev_exit.py::test_eve_dev_exit_ends_the_servers_it_started": 28,
    "tests/sessions/test_parked_turns.py::test_a_thousand_parked_sessions_do_not_delay_a_new_one": 26,
    "tests/sessions/test_tasks.py::test_a_workflow_tool_asks_a_person_parks_across_a_restart_and_settles": 25,
    "tests/server/test_embed_uvicorn.py::test_a_mounted_session_survives_a_killed_host": 24,
    "tests/sessions/test_accepted_durable.py::test_postgres_restarts_and_killed_connections_lose_no_accepted_turn": 23,
    "tests/sessions/test_postgres.py::test_concurrent_sessions_across_two_processes": 22,
    "tests/schedules/test_workers.py::test_two_workers_never_fire_a_tick_twice": 22,
    "tests/schedules/test_workers.py::test_two_servers_on_one_sqlite_database_never_fire_a_tick_twice": 20,
    "tests/sessions/test_retention.py::test_eve_serve_prunes_at_start_when_eve_retention_is_set": 21,
    "tests/server/test_followers.py::test_stopping_ends_every_followed_stream_in_one_line": 21,
    "tests/cli/test_dev_cli.py::test_a_second_ctrl_c_quits_while_a_sync_tool_blocks": 20,
    "tests/sessions/test_crash_recovery.py::test_sigkill_mid_tool_then_restart_finishes_the_turn_once": 19,
    "tests/ui/test_dev_ui.py::test_with_a_token_the_page_asks_for_it_and_keeps_it_out_of_urls": 18,
    "tests/test_docs.py::test_shell_examples_run_against_a_server[http-api.md]": 18,
    "tests/cli/test_dev_cli.py::test_resume_after_a_quit_that_left_the_ended_turn_active": 18,
    "tests/ui/test_dev_ui.py::test_a_server_restart_mid_stream_leaves_no_gap_and_no_duplicate": 16,
    "tests/sessions/test_postgres.py::test_two_processes_serve_the_same_sessions": 15,
    "tests/sessions/test_session_limits.py::test_a_limit_request_waits_across_a_restart_and_is_answered_once": 14,
    "tests/sessions/test_serve_workers.py::test_workers_read_the_url_from_database_url_env": 14,
    "tests/sessions/test_postgres.py::test_supervisor_restarts_the_killed_worker_which_finishes_the_turn": 14,
    "tests/sessions/test_compaction_http.py::test_a_sigkill_after_a_compaction_does_not_write_the_summary_again": 14,
    "tests/channels/test_ag_ui.py::test_a_tool_call_then_a_plain_answer_with_the_state": 14,
    "tests/sessions/test_tasks.py::test_a_subagent_session_asks_through_its_caller_and_its_events_are_linked": 13,
    "tests/sessions/test_turn_queue.py::test_turns_run_in_the_order_their_messages_were_accepted": 12,
    "tests/sessions/test_idempotency.py::test_the_first_answer_survives_a_killed_server": 12,
    "tests/sessions/test_crash_recovery.py::test_state_survives_the_crash_into_the_next_turn": 12,
    "tests/cli/test_dev_cli.py::test_resume_asks_again_what_a_killed_run_was_asking": 12,
    "tests/tracing/test_durable_spans.py::test_a_turn_recovered_after_sigkill_traces_completed_steps_once": 11,
    "tests/sessions/test_turn_input.py::test_a_turn_queued_with_a_plain_string_still_runs": 11,
    "tests/sessions/test_approvals.py::test_approval_parks_across_a_restart_and_runs_once": 11,
    "tests/client/test_client.py::test_a_stream_survives_a_server_restart_without_gap_or_duplicate": 11,
    "tests/cli/test_dev_cli.py::test_resume_continues_the_last_conversation_with_its_state": 11,
    "tests/channels/test_ai_sdk.py::test_a_plain_answer": 11,
    "tests/ui/test_dev_ui.py::test_the_sessions_page_lists_new_sessions_without_a_reload": 10,
    "tests/test_bench_smoke.py::test_the_mcp_call_bench_runs_both_sides": 10,
    "tests/sessions/test_compaction_crash.py::test_a_sigkill_during_a_requested_compaction_writes_the_summary_once": 10,
    "tests/sessions/test_catalog.py::test_a_catalog_call_parks_as_its_tool_and_runs_once_approved": 10,
    "tests/server/test_serving.py::test_sigterm_stops_the_server_while_a_client_follows_a_stream": 10,
    "tests/connections/test_connections_cli.py::test_info_lists_and_connections_list_connects": 10,
    "tests/sessions/test_postgres.py::test_survivor_adopts_the_turn_of_a_killed_worker": 9,
    "tests/sessions/test_checkpoint_versions.py::test_a_turn_killed_after_its_save_recovers_from_what_it_first_loaded": 9,
    "tests/hooks/test_hooks_recovery.py::test_a_crash_mid_turn_neither_loses_nor_doubles_hook_state": 9,
    "tests/cli/test_dev_cli.py::test_dev_asks_to_raise_a_session_limit_then_ends_the_session": 9,
    "tests/channels/test_ag_ui_durability.py::test_a_turn_survives_a_server_restart": 9,
    "tests/test_docs.py::test_python_examples_run[client.md]": 8,
    "tests/test_conftest_guard.py::test_the_guard_fires_and_a_mark_opts_out": 8,
    "tests/sessions/test_serve_workers.py::test_workers_that_cannot_reach_the_database_stop_the_server": 8,
    "tests/sessions/test_approvals.py::test_a_parked_turn_goes_on_after_agent_changes_and_stale_state_is_dropped": 8,
    "tests/cli/test_dev_cli.py::test_dev_asks_a_workflow_tools_question_until_it_gets_an_option": 8,
    "tests/ui/test_oidc_login.py::test_signing_in_through_the_issuer_lists_the_sessions_as_that_user": 7,
    "tests/test_docs.py::test_python_examples_run[tracing.md]": 7,
    "tests/sessions/test_many_sessions.py::test_fifty_concurrent_sessions": 7,
    "tests/sessions/test_serve_workers.py::test_a_worker_that_raises_is_one_redacted_line_and_a_failed_server": 6,
    "tests/cli/test_dev_cli.py::test_ctrl_c_at_an_approval_prompt_cancels_the_turn": 6,
    "tests/test_docs_outputs.py::test_the_sample_output_is_what_the_command_prints[cli.md:68]": 5,
    "tests/connections/test_mcp_output_cap.py::test_a_big_mcp_result_is_capped_for_the_model_and_the_store": 5,
    "tests/cli/test_dev_web.py::test_a_token_of_ones_own_is_used_and_not_printed_and_hosts_can_be_added": 5,
    "tests/channels/test_ag_ui_durability.py::test_a_dropped_connection_resumes_from_the_log": 5,
    "tests/test_bench_smoke.py::test_the_channel_latency_bench_measures_the_native_stream_and_the_custom_probe": 4,
    "tests/sessions/test_serve_startup.py::test_a_port_in_use_is_a_config_error": 4,
    "tests/evals/test_eval_cli.py::test_the_process_exit_code": 4,
    "tests/cli/test_dev_compact.py::test_compact_folds_the_history_and_the_conversation_goes_on": 4,
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
