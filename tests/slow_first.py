"""Start the slowest tests first, spread over the workers, so none is left running alone.

pytest-xdist's worksteal scheduler hands each of its W workers one contiguous share of the
collected order (the first ``len // W`` tests to the first, and so on) and only then moves
tests from the longest queue to an idle worker, taking them from that queue's end. Tests
that take most of a minute (a server killed and restarted, a fault held on) therefore
finish last when they sit late in the order, and all land on one worker when they sit
together. This orders each share to begin with its part of the slow tests, dealt longest
first to the share with the least slow time so far, so that they run while the short ones
are stolen around them; a module with slow tests moves whole, so that its module-scoped
fixtures are set up once. It changes which test runs when, never what a test does.
"""

from __future__ import annotations

import os

import pytest

#: seconds a test took in a full ``make test`` run (``--durations=500``: setup, call and
#: teardown; the tests over 2 s): only the ranking and each module's sum matter. A test
#: missing here counts as short; a renamed one simply stops being moved.
SLOW: dict[str, float] = {
    "tests/sessions/test_fault_logs.py::test_a_minute_without_postgres_is_a_few_lines": 24.2,
    "tests/sessions/test_fault_logs.py::test_a_minute_of_full_disk_is_a_few_lines": 24.9,
    "tests/sessions/test_hosts.py::test_a_killed_hosts_turn_is_adopted_by_the_other_host": 12.6,
    "tests/test_install.py::test_the_wheel_installs_and_starts_a_new_app_outside_the_repo": 11.7,
    "tests/test_bench_smoke.py::test_the_scale_bench_runs_its_clients_against_a_real_server": 9.5,
    "tests/sessions/test_hosts.py::test_hosts_in_namespaces_share_sessions_and_streams": 9.2,
    "tests/schedules/test_restarts.py::test_ticks_missed_while_down_run_once_or_are_skipped[skipped]": 7.9,
    "tests/sessions/test_pg_first_message.py::test_an_open_whose_holder_died_after_the_answer_is_finished_by_the_sweep": 10.3,
    "tests/sessions/test_dynamic_crash.py::test_a_recovered_turn_keeps_its_prompt_and_rebuilds_its_deps": 8.4,
    "tests/execution/test_exhaustive.py::test_an_added_variant_nothing_handles_fails_mypy": 8.3,
    "tests/ui/test_dev_ui_forms.py::test_a_servers_form_is_filled_in_and_accepted_from_the_page": 7.8,
    "tests/test_docs.py::test_shell_examples_run_against_a_server[http-api.md]": 7.8,
    "tests/schedules/test_restarts.py::test_ticks_missed_while_down_run_once_or_are_skipped[caught-up]": 7.5,
    "tests/schedules/test_restarts.py::test_ticks_missed_while_down_run_once_or_are_skipped[caught-up-after-a-live-tick]": 7.5,
    "tests/sessions/test_postgres.py::test_two_processes_serve_the_same_sessions": 7.7,
    "tests/ui/test_dev_ui.py::test_the_sessions_page_lists_new_sessions_without_a_reload": 7.5,
    "tests/connections/test_mcp_serve_restart.py::test_an_mcp_tools_approval_parks_across_a_kill_and_runs_once": 7.4,
    "tests/sessions/test_accepted_durable.py::test_postgres_restarts_and_killed_connections_lose_no_accepted_turn": 7.1,
    "tests/sessions/test_parked_turns.py::test_a_thousand_parked_sessions_do_not_delay_a_new_one": 7.0,
    "tests/sessions/test_session_limits.py::test_the_cost_limit_with_a_priced_model_parks_and_a_raise_goes_on": 6.9,
    "tests/sessions/test_postgres.py::test_survivor_adopts_a_turn_parked_in_a_workflow_tool": 6.6,
    "tests/schedules/test_delivery.py::test_a_sender_killed_before_its_answer_sends_the_same_message_again": 6.6,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[auth/scope-step-up]": 6.2,
    "tests/schedules/test_workers.py::test_two_workers_never_fire_a_tick_twice": 6.1,
    "tests/sessions/test_postgres.py::test_survivor_adopts_the_turn_of_a_killed_worker": 6.1,
    "tests/sessions/test_workspace_sweep.py::test_prune_sweeps_old_trees_and_keeps_heads_and_a_parked_turns_trees[postgresql]": 5.9,
    "tests/ui/test_dev_ui_oauth.py::test_the_page_shows_the_sign_in_link_and_following_it_goes_on": 5.7,
    "tests/connections/test_pool_recovery.py::test_a_session_the_http_server_ended_is_renewed_and_the_call_sent_once": 5.6,
    "tests/test_docs.py::test_python_examples_run[tracing.md]": 5.5,
    "tests/connections/test_mcp_oauth_restart.py::test_a_sign_in_waiting_at_a_crash_is_asked_again_after_the_restart": 5.5,
    "tests/channels/test_ai_sdk_page.py::test_the_page_chats_and_approves": 5.4,
    "tests/sessions/test_turn_input.py::test_a_turn_queued_with_a_plain_string_still_runs": 5.4,
    "tests/sessions/test_sqlite_workers.py::test_two_workers_share_sessions_in_order_and_follow_each_others_turns": 5.4,
    "tests/channels/test_slack_schedules.py::test_a_worker_killed_between_slacks_answer_and_its_record_posts_once": 5.4,
    "tests/sessions/test_accepted_retention.py::test_prune_forgets_old_delivered_places_and_keeps_undelivered_and_keyed_ones[postgresql]": 5.3,
    "tests/tracing/test_durable_spans.py::test_a_turn_recovered_after_sigkill_traces_completed_steps_once": 5.1,
    "tests/server/test_embed_uvicorn.py::test_a_mounted_session_survives_a_killed_host": 5.0,
    "tests/connections/test_mcp_elicitation.py::test_a_restart_mid_form_does_not_send_the_call_again": 5.0,
    "tests/sessions/test_attachments_http.py::test_oversized_parts_and_totals_are_413": 4.9,
    "tests/sessions/test_serve_database.py::test_requests_answer_503_once_the_database_is_gone": 4.8,
    "tests/ui/test_oidc_login.py::test_signing_in_through_the_issuer_lists_the_sessions_as_that_user": 4.7,
    "tests/sessions/test_idempotent_open.py::test_ten_creates_at_once_across_two_workers_open_one_session_once": 4.7,
    "tests/connections/test_mcp_forms_cli.py::test_dev_fills_in_a_servers_form_field_by_field": 4.7,
    "tests/sessions/test_compaction_crash.py::test_a_sigkill_during_a_requested_compaction_writes_the_summary_once": 4.4,
    "tests/schedules/test_workers.py::test_two_servers_on_one_sqlite_database_never_fire_a_tick_twice": 4.4,
    "tests/sessions/test_approvals.py::test_a_parked_turn_goes_on_after_agent_changes_and_stale_state_is_dropped": 4.2,
    "tests/sessions/test_sqlite_workers.py::test_a_sibling_on_the_same_files_adopts_a_killed_servers_turn": 4.2,
    "tests/channels/test_ag_ui_forms.py::test_a_form_is_answered_with_values_checked_against_its_fields": 4.1,
    "tests/sessions/test_postgres.py::test_supervisor_restarts_the_killed_worker_which_finishes_the_turn": 4.1,
    "tests/connections/test_lazy_listing.py::test_a_search_of_the_catalog_starts_its_servers_then": 4.0,
    "tests/test_forked.py::test_a_fork_prints_and_exits_as_a_fresh_interpreter": 4.0,
    "tests/connections/test_mcp_elicitation.py::test_a_form_is_answered_over_http_with_checked_values": 4.0,
    "tests/memory/test_memory_crash.py::test_a_sigkill_mid_step_neither_loses_nor_duplicates_the_saved_memory": 4.0,
    "tests/sessions/test_session_limits.py::test_a_limit_request_waits_across_a_restart_and_is_answered_once": 4.0,
    "tests/sessions/test_turn_queue.py::test_turns_run_in_the_order_their_messages_were_accepted": 4.0,
    "tests/ui/test_cross_origin.py::test_a_page_of_another_origin_reads_nothing_and_creates_nothing": 3.9,
    "tests/ui/test_dev_ui.py::test_a_server_restart_mid_stream_leaves_no_gap_and_no_duplicate": 3.9,
    "tests/ui/test_dev_ui.py::test_a_turn_shows_its_tools_subagent_approval_question_and_answer": 3.8,
    "tests/sessions/test_idle_timeout.py::test_an_idle_session_ends_on_its_timer_across_a_restart": 3.8,
    "tests/sessions/test_compaction_http.py::test_a_sigkill_after_a_compaction_does_not_write_the_summary_again": 3.8,
    "tests/schedules/test_delivery.py::test_a_tick_an_older_eve_recorded_delivering_in_one_step_replays_from_that_record": 3.8,
    "tests/sessions/test_accepted_durable.py::test_a_held_sqlite_lock_loses_no_accepted_turn": 3.7,
    "tests/sessions/test_accepted_sweep.py::test_a_turn_whose_runs_keep_ending_unanswered_fails_visibly": 3.7,
    "tests/sessions/test_storage_faults.py::test_a_full_disk_fails_the_turn_then_it_finishes_without_a_restart": 3.6,
    "tests/sessions/test_approvals.py::test_approval_parks_across_a_restart_and_runs_once": 3.5,
    "tests/hooks/test_hooks_recovery.py::test_a_crash_mid_turn_neither_loses_nor_doubles_hook_state": 3.5,
    "tests/connections/test_mcp_oauth_cli.py::test_eve_run_prints_the_link_and_takes_the_callback_itself": 3.5,
    "tests/sessions/test_idempotency.py::test_the_first_answer_survives_a_killed_server": 3.5,
    "tests/sessions/test_accepted_sweep.py::test_a_turn_whose_workflow_ended_unanswered_runs_again_in_its_place": 3.5,
    "tests/connections/test_mcp_oauth.py::test_a_person_signing_in_stops_the_connect_and_the_call_clocks": 3.5,
    "tests/sessions/test_tasks.py::test_a_subagent_session_asks_through_its_caller_and_its_events_are_linked": 3.5,
    "tests/memory/test_memory_crash.py::test_a_rerun_with_new_call_ids_keeps_only_its_own_save": 3.4,
    "tests/connections/test_everything_server.py::test_a_restarted_http_server_gets_a_new_session": 3.4,
    "tests/models/test_bedrock_replay.py::test_a_recorded_model_stream_error_frame": 3.4,
    "tests/sessions/test_tasks.py::test_a_workflow_tool_asks_a_person_parks_across_a_restart_and_settles": 3.3,
    "tests/channels/test_ag_ui_durability.py::test_a_turn_survives_a_server_restart": 3.3,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[auth/client-credentials-jwt]": 3.3,
    "tests/channels/test_slack_schedules.py::test_the_answer_is_a_new_message_and_its_thread_continues_the_run": 3.3,
    "tests/sessions/test_postgres.py::test_concurrent_sessions_across_two_processes": 3.3,
    "tests/models/test_chat_dialects.py::test_openrouter_repeats_finish_reason_on_its_usage_chunk": 3.2,
    "tests/sessions/test_catalog.py::test_a_catalog_call_parks_as_its_tool_and_runs_once_approved": 3.2,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[auth/pre-registration]": 3.2,
    "tests/channels/test_serve_restart.py::test_an_a2a_task_survives_a_sigkill_of_eve_serve": 3.1,
    "tests/channels/test_a2a_restart.py::test_a_task_running_across_a_restart_ends_for_the_client_that_subscribes_again": 3.1,
    "tests/sessions/test_crash_recovery.py::test_sigkill_mid_tool_then_restart_finishes_the_turn_once": 3.1,
    "tests/sandbox/test_unprivileged.py::test_the_command_runs_as_the_user_with_no_capabilities": 3.1,
    "tests/server/test_collector.py::test_tuning_freezes_the_heap_and_spaces_full_collections": 3.0,
    "tests/test_bench_smoke.py::test_the_mcp_call_bench_runs_both_sides": 3.0,
    "tests/channels/test_a2a_forms.py::test_a_form_is_accepted_by_a_data_part_with_checked_values": 2.9,
    "tests/sessions/test_retention.py::test_eve_serve_prunes_at_start_when_eve_retention_is_set": 2.9,
    "tests/connections/test_mcp_conformance.py::test_a_conformance_scenario_passes[elicitation-sep1034-client-defaults]": 2.9,
    "tests/test_conftest_guard.py::test_the_guard_fires_and_a_mark_opts_out": 2.8,
    "tests/connections/test_mcp_elicitation.py::test_decline_and_a_cancelled_turn_reach_the_server_as_the_spec_says": 2.7,
    "tests/channels/test_ag_ui.py::test_a_tool_call_then_a_plain_answer_with_the_state": 2.7,
    "tests/sessions/test_serve_workers.py::test_a_worker_that_raises_is_one_redacted_line_and_a_failed_server": 2.6,
    "tests/sessions/test_crash_recovery.py::test_state_survives_the_crash_into_the_next_turn": 2.6,
    "tests/sessions/test_sqlite_workers.py::test_a_killed_worker_is_restarted_and_finishes_its_turn_once": 2.6,
    "tests/cli/test_run_cli.py::test_a_provider_error_never_shows_the_key": 2.6,
    "tests/schedules/test_delivery.py::test_a_receiver_that_says_not_now_gets_the_same_message_again_signed": 2.6,
    "tests/sessions/test_serve_workers.py::test_a_worker_that_keeps_dying_after_serving_stops_the_server": 2.6,
    "tests/sessions/test_idle_timeout.py::test_a_message_moves_the_deadline": 2.6,
    "tests/sessions/test_push.py::test_a_notify_reaches_a_follower_on_another_worker": 2.6,
    "tests/client/test_client.py::test_a_stream_survives_a_server_restart_without_gap_or_duplicate": 2.5,
    "tests/sessions/test_worker_identity.py::test_a_second_process_under_a_live_workers_id_refuses_to_start": 2.5,
    "tests/schedules/test_ticks.py::test_a_tick_opens_a_session_that_says_what_started_it": 2.5,
    "tests/test_docs.py::test_python_examples_run[sessions.md]": 2.5,
    "tests/sessions/test_storage_faults.py::test_a_locked_queue_still_accepts_and_the_sweep_queues_the_turn": 2.5,
    "tests/sessions/test_storage_faults.py::test_a_lock_held_as_a_requests_turn_ends_delays_its_outcome_and_loses_nothing": 2.5,
    "tests/connections/test_connections_cli.py::test_info_lists_and_connections_list_connects": 2.5,
    "tests/sessions/test_checkpoint_versions.py::test_a_turn_killed_after_its_save_recovers_from_what_it_first_loaded": 2.5,
    "tests/channels/test_slack_schedules.py::test_a_scheduled_message_whose_answer_was_lost_is_posted_once": 2.5,
    "tests/sessions/test_step_records.py::test_a_turn_an_older_eve_parked_replays_its_dbos_step_records_after_the_upgrade": 2.4,
    "tests/server/test_followers.py::test_stopping_ends_every_followed_stream_in_one_line": 2.4,
    "tests/ui/test_dev_ui.py::test_with_a_token_the_page_asks_for_it_and_keeps_it_out_of_urls": 2.4,
    "tests/sessions/test_workspaces.py::test_a_turn_resumed_after_a_crash_sees_the_files_it_saw": 2.4,
    "tests/cli/test_dev_cli.py::test_resume_continues_the_last_conversation_with_its_state": 2.4,
    "tests/models/test_openai.py::test_structured_output_uses_response_format": 2.3,
    "tests/schedules/test_delivery.py::test_a_scheduled_turn_parks_on_its_approval_and_delivers_once_answered": 2.3,
    "tests/channels/test_slack_once.py::test_two_workers_delivering_one_thread_post_its_reply_once": 2.3,
    "tests/sessions/test_workspace_sweep.py::test_prune_sweeps_old_trees_and_keeps_heads_and_a_parked_turns_trees[sqlite]": 2.3,
    "tests/channels/test_ag_ui.py::test_a_client_without_the_token_is_refused": 2.3,
    "tests/cli/test_dev_cli.py::test_resume_asks_again_what_a_killed_run_was_asking": 2.3,
    "tests/channels/test_ag_ui_durability.py::test_a_dropped_connection_resumes_from_the_log": 2.3,
    "tests/cli/test_dev_cli.py::test_resume_after_a_quit_that_left_the_ended_turn_active": 2.2,
    "tests/channels/test_mcp_durable.py::test_a_restart_mid_turn_loses_nothing": 2.2,
    "tests/sessions/test_turn_queue.py::test_messages_during_a_turn_run_after_it_in_order": 2.2,
    "tests/sessions/test_tasks.py::test_a_sleep_ends_on_time_while_other_messages_keep_arriving": 2.1,
    "tests/sessions/test_sqlite_workers.py::test_an_answer_through_one_server_continues_a_turn_parked_on_the_other": 2.1,
    "tests/channels/test_slack_schedules.py::test_a_reply_before_the_thread_is_recorded_finds_the_run_by_its_message": 2.1,
    "tests/connections/test_mcp_dev_exit.py::test_eve_dev_exit_ends_the_servers_it_started": 2.1,
    "tests/sessions/test_fork.py::test_a_busy_source_is_refused_and_the_route_and_clients_fork[postgresql]": 2.1,
    "tests/sessions/test_push.py::test_a_lost_listen_connection_recovers_without_losing_events": 2.1,
    "tests/builtins/test_races.py::test_a_racing_symlink_never_lets_write_file_out": 2.1,
    "tests/sessions/test_dbos_sqlite.py::test_dboss_background_jobs_run_rarely_on_sqlite_only[postgresql-1.0]": 2.0,
    "tests/ui/test_cross_origin.py::test_a_rebound_name_gets_nothing_and_an_allowed_one_gets_the_ui": 2.0,
    "tests/sessions/test_turn_queue.py::test_concurrent_sends_are_each_run_exactly_once": 2.0,
    "tests/channels/test_ag_ui_durability.py::test_a_cancel_ends_the_run_as_cancelled": 2.0,
}


def _shares(count: int, workers: int) -> list[int]:
    """How many tests each worker gets first, as worksteal computes it."""
    sizes: list[int] = []
    for left in range(workers, 0, -1):
        sizes.append((count - sum(sizes)) // left)
    return sizes


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def ordered(
    items: list[pytest.Item],
    workers: int,
    *,
    slow: dict[str, float] = SLOW,
    shared: frozenset[str] = frozenset(),
) -> list[pytest.Item]:
    """``items`` with each worker's share led by its part of the slow tests.

    A module with slow tests moves whole, its tests in their collected order: its
    module-scoped fixtures (a browser, a server, a database) are then set up once, where
    scattering its slow tests over the shares set them up once per worker that ran one (the
    dev UI's Chromium and server seven times in one run). So does a module of ``shared``
    (its tests share a module-scoped fixture), behind the slow ones: a share's last tests
    are the ones stolen, half of what is left at a time, and a module split by a steal or
    by the end of a share set its fixture up again on each worker that ran a part (an
    in-process server six times in one run). Only modules without one fill the shares'
    ends."""
    if workers < 2:
        return items  # one process runs them all either way: keep each module together
    sizes = _shares(len(items), workers)
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(_module(item), []).append(item)
    weights = {name: sum(slow.get(i.nodeid, 0.0) for i in group) for name, group in modules.items()}
    heads: list[list[pytest.Item]] = [[] for _ in sizes]
    loads = [0.0 for _ in sizes]
    moved: set[str] = set()
    for name in sorted((n for n in modules if weights[n]), key=lambda n: -weights[n]):
        group = modules[name]
        room = [k for k in range(workers) if len(heads[k]) + len(group) <= sizes[k]]
        if room:  # a module larger than any share's room left stays where it is
            share = min(room, key=loads.__getitem__)
            heads[share] += group
            loads[share] += weights[name]
            moved.add(name)
    whole = [n for n in modules if n in shared and n not in moved]
    for name in sorted(whole, key=lambda n: -len(modules[n])):
        group = modules[name]
        left = [sizes[k] - len(heads[k]) for k in range(workers)]
        share = max(range(workers), key=left.__getitem__)
        if len(group) <= left[share]:
            heads[share] += group
            moved.add(name)
    rest = iter(i for i in items if _module(i) not in moved)
    result: list[pytest.Item] = []
    for head, size in zip(heads, sizes, strict=True):
        result += head
        result += [next(rest) for _ in range(size - len(head))]
    return result


#: fixture scopes whose one value serves several tests of a module (a package's is set up
#: again whenever a worker comes back to the package, kept whole or not)
_SHARED_SCOPES = ("module", "class")


def _shares_a_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture set up once for several tests of its module."""
    # pytest keeps a test's fixtures in a private attribute (pytest>=8,<10)
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in _SHARED_SCOPES for defs in info.name2fixturedefs.values() for d in defs)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # every worker collects and must come to the same order; the controller compares them
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    shared = frozenset(_module(i) for i in items if _shares_a_fixture(i))
    items[:] = ordered(items, workers, shared=shared)
