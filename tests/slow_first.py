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

#: seconds a test took in a full ``make test`` run (``--durations``: setup, call and teardown;
#: the slowest 89), measured on the 2-core machine shared with other builds (load 10-17), so
#: a test busy on the CPU is stretched more than one waiting on a fault: only the ranking
#: matters. A test missing here counts as short; a renamed one simply stops being moved.
SLOW: dict[str, float] = {
    "tests/channels/test_slack_schedules.py::test_a_worker_killed_between_slacks_answer_and_its_record_posts_once": 4.8,
    "tests/schedules/test_delivery.py::test_a_sender_killed_before_its_answer_sends_the_same_message_again": 8.0,
    "tests/sessions/test_fault_logs.py::test_a_minute_without_postgres_is_a_few_lines": 42.9,
    "tests/test_docs.py::test_shell_examples_run_against_a_server[http-api.md]": 39.4,
    "tests/execution/test_exhaustive.py::test_an_added_variant_nothing_handles_fails_mypy": 39.1,
    "tests/sessions/test_accepted_retention.py::test_prune_forgets_old_delivered_places_and_keeps_undelivered_and_keyed_ones[postgresql]": 38.8,
    "tests/ui/test_dev_ui.py::test_a_server_restart_mid_stream_leaves_no_gap_and_no_duplicate": 38.5,
    "tests/connections/test_mcp_oauth_restart.py::test_a_sign_in_waiting_at_a_crash_is_asked_again_after_the_restart": 35.0,
    "tests/sessions/test_parked_turns.py::test_a_thousand_parked_sessions_do_not_delay_a_new_one": 33.2,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[auth/pre-registration]": 33.0,
    "tests/models/test_gemini_rules.py::test_reasoning_becomes_each_model_s_thinking_config[gemini-3-pro-preview-medium-expected1]": 31.7,
    "tests/ui/test_dev_ui.py::test_a_turn_shows_its_tools_subagent_approval_question_and_answer": 31.1,
    "tests/sessions/test_compaction_crash.py::test_a_sigkill_during_a_requested_compaction_writes_the_summary_once": 29.8,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[elicitation-sep1034-client-defaults]": 29.7,
    "tests/connections/test_mcp_elicitation.py::test_a_restart_mid_form_does_not_send_the_call_again": 29.6,
    "tests/test_install.py::test_the_wheel_installs_and_starts_a_new_app_outside_the_repo": 28.8,
    "tests/sessions/test_fault_logs.py::test_a_minute_of_full_disk_is_a_few_lines": 27.7,
    "tests/server/test_embed_uvicorn.py::test_a_mounted_session_survives_a_killed_host": 24.7,
    "tests/sessions/test_hosts.py::test_a_killed_hosts_turn_is_adopted_by_the_other_host": 24.3,
    "tests/sessions/test_attachments_http.py::test_oversized_parts_and_totals_are_413": 23.4,
    "tests/sessions/test_hosts.py::test_hosts_in_namespaces_share_sessions_and_streams": 23.4,
    "tests/ui/test_dev_ui_oauth.py::test_the_page_shows_the_sign_in_link_and_following_it_goes_on": 21.0,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[auth/scope-step-up]": 20.8,
    "tests/memory/test_memory_crash.py::test_a_rerun_with_new_call_ids_keeps_only_its_own_save": 20.3,
    "tests/sessions/test_workspace_sweep.py::test_prune_sweeps_old_trees_and_keeps_heads_and_a_parked_turns_trees[postgresql]": 20.1,
    "tests/sessions/test_secrets.py::test_keys_in_tool_input_provider_errors_and_stream_errors_are_stored_nowhere": 19.7,
    "tests/sessions/test_postgres.py::test_concurrent_sessions_across_two_processes": 19.2,
    "tests/sessions/test_accepted_durable.py::test_postgres_restarts_and_killed_connections_lose_no_accepted_turn": 18.7,
    "tests/sessions/test_postgres.py::test_survivor_adopts_a_turn_parked_in_a_workflow_tool": 18.3,
    "tests/channels/test_ag_ui_durability.py::test_a_turn_survives_a_server_restart": 18.2,
    "tests/ui/test_dev_ui.py::test_the_sessions_page_lists_new_sessions_without_a_reload": 17.9,
    "tests/connections/test_mcp_forms_cli.py::test_dev_fills_in_a_servers_form_field_by_field": 17.9,
    "tests/test_forked.py::test_a_fork_prints_and_exits_as_a_fresh_interpreter": 17.9,
    "tests/execution/test_fallback.py::test_another_providers_reasoning_never_reaches_the_fallback": 17.8,
    "tests/sessions/test_idempotent_open.py::test_ten_creates_at_once_across_two_workers_open_one_session_once": 17.6,
    "tests/connections/test_connections_cli.py::test_info_lists_and_connections_list_connects": 17.5,
    "tests/connections/test_pool_recovery.py::test_a_session_the_http_server_ended_is_renewed_and_the_call_sent_once": 17.2,
    "tests/connections/test_mcp_serve_restart.py::test_an_mcp_tools_approval_parks_across_a_kill_and_runs_once": 17.2,
    "tests/channels/test_ai_sdk_page.py::test_the_page_chats_and_approves": 17.0,
    "tests/sessions/test_turn_queue.py::test_turns_run_in_the_order_their_messages_were_accepted": 16.6,
    "tests/sessions/test_dynamic_crash.py::test_a_recovered_turn_keeps_its_prompt_and_rebuilds_its_deps": 16.6,
    "tests/cli/test_run_cli.py::test_a_provider_error_never_shows_the_key": 16.3,
    "tests/sessions/test_postgres.py::test_two_processes_serve_the_same_sessions": 16.3,
    "tests/schedules/test_workers.py::test_two_workers_never_fire_a_tick_twice": 15.8,
    "tests/test_docs.py::test_python_examples_run[sessions.md]": 15.7,
    "tests/sessions/test_session_summary.py::test_the_totals_survive_a_server_restart": 15.3,
    "tests/sessions/test_postgres.py::test_supervisor_restarts_the_killed_worker_which_finishes_the_turn": 14.7,
    "tests/test_bench_smoke.py::test_the_scale_bench_runs_its_clients_against_a_real_server": 14.7,
    "tests/connections/test_mcp_elicitation.py::test_a_form_is_answered_over_http_with_checked_values": 14.5,
    "tests/channels/test_ag_ui_durability.py::test_a_cancel_ends_the_run_as_cancelled": 14.5,
    "tests/cli/test_dev_cli.py::test_resume_after_a_quit_that_left_the_ended_turn_active": 14.3,
    "tests/sessions/test_retention.py::test_eve_serve_prunes_at_start_when_eve_retention_is_set": 14.0,
    "tests/cli/test_dev_cli.py::test_resume_continues_the_last_conversation_with_its_state": 13.9,
    "tests/sessions/test_accepted_retention.py::test_prune_forgets_old_delivered_places_and_keeps_undelivered_and_keyed_ones[sqlite]": 13.7,
    "tests/sessions/test_serve_workers.py::test_one_worker_failing_to_start_stops_those_that_serve": 12.5,
    "tests/connections/test_mcp_dev_exit.py::test_eve_dev_exit_ends_the_servers_it_started": 12.4,
    "tests/sessions/test_tasks.py::test_a_sleep_ends_on_time_while_other_messages_keep_arriving": 11.8,
    "tests/sessions/test_turn_input.py::test_a_turn_queued_with_a_plain_string_still_runs": 11.7,
    "tests/channels/test_ag_ui_durability.py::test_a_dropped_connection_resumes_from_the_log": 11.5,
    "tests/tracing/test_durable_spans.py::test_a_turn_recovered_after_sigkill_traces_completed_steps_once": 11.4,
    "tests/cli/test_dev_cli.py::test_a_dev_conversation": 11.4,
    "tests/ui/test_dev_ui_forms.py::test_a_servers_form_is_filled_in_and_accepted_from_the_page": 11.2,
    "tests/sessions/test_compaction_http.py::test_a_sigkill_after_a_compaction_does_not_write_the_summary_again": 11.2,
    "tests/schedules/test_workers.py::test_two_servers_on_one_sqlite_database_never_fire_a_tick_twice": 11.2,
    "tests/sessions/test_storage_growth.py::test_late_turns_add_no_more_bytes_than_early_ones": 10.9,
    "tests/sessions/test_approvals.py::test_a_parked_turn_goes_on_after_agent_changes_and_stale_state_is_dropped": 10.9,
    "tests/connections/test_mcp_elicitation.py::test_decline_and_a_cancelled_turn_reach_the_server_as_the_spec_says": 10.8,
    "tests/sessions/test_serve_workers.py::test_a_worker_that_keeps_dying_after_serving_stops_the_server": 10.6,
    "tests/sessions/test_crash_recovery.py::test_sigkill_mid_tool_then_restart_finishes_the_turn_once": 10.6,
    "tests/ui/test_dev_ui.py::test_with_a_token_the_page_asks_for_it_and_keeps_it_out_of_urls": 10.5,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[auth/client-credentials-jwt]": 10.5,
    "tests/sessions/test_postgres.py::test_survivor_adopts_the_turn_of_a_killed_worker": 10.5,
    "tests/test_docs_outputs.py::test_the_sample_output_is_what_the_command_prints[cli.md:605]": 10.2,
    "tests/sessions/test_idle_timeout.py::test_an_idle_session_ends_on_its_timer_across_a_restart": 10.1,
    "tests/sessions/test_accepted_sweep.py::test_a_turn_whose_workflow_ended_unanswered_runs_again_in_its_place": 10.1,
    "tests/sessions/test_durable_fallback.py::test_a_fallback_is_one_durable_step_that_records_who_answered": 10.0,
    "tests/channels/test_slack_schedules.py::test_a_refusing_slack_is_retried_then_named_without_the_token": 9.9,
    "tests/schedules/test_restarts.py::test_ticks_missed_while_down_run_once_or_are_skipped[true-1]": 9.8,
    "tests/sessions/test_crash_recovery.py::test_state_survives_the_crash_into_the_next_turn": 9.8,
    "tests/schedules/test_restarts.py::test_ticks_missed_while_down_run_once_or_are_skipped[false-0]": 9.6,
    "tests/test_forked.py::test_a_fork_takes_the_directory_environment_and_input_it_is_given": 9.4,
    "tests/channels/test_a2a_restart.py::test_a_task_running_across_a_restart_ends_for_the_client_that_subscribes_again": 9.1,
    "tests/client/test_client.py::test_the_async_client_runs_parks_and_cancels": 9.0,
    "tests/sessions/test_serve_database.py::test_requests_answer_503_once_the_database_is_gone": 8.8,
    "tests/sessions/test_accepted_durable.py::test_a_held_sqlite_lock_loses_no_accepted_turn": 8.8,
    "tests/test_docs.py::test_python_examples_run[client.md]": 8.8,
    "tests/models/test_chat_dialects.py::test_reasoning_fields_stream_as_reasoning[reasoning]": 8.6,
    "tests/sessions/test_many_sessions.py::test_fifty_concurrent_sessions": 8.5,
    "tests/channels/test_serve_restart.py::test_an_a2a_task_survives_a_sigkill_of_eve_serve": 8.3,
    "tests/sessions/test_fork.py::test_a_busy_source_is_refused_and_the_route_and_clients_fork[postgresql]": 8.0,
    "tests/sessions/test_accepted_retention.py::test_only_done_places_with_nothing_unfinished_ahead_are_forgotten[sqlite]": 8.0,
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
