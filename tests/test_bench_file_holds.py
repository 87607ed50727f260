"""The file-holds log's hand-overs (``bench/_file_holds.py``): how long eve's file lay free
while a worker waited for it, from every worker's intervals."""

from __future__ import annotations

from bench._file_holds import handovers


def test_a_hand_over_s_gap_is_from_the_other_worker_s_last_hold_to_the_lock() -> None:
    spans = [
        (1, "lane_hold", 0.000, 0.010),
        (2, "lane_wait", 0.002, 0.011),  # waited for worker 1's hold: free for 1 ms of it
        (2, "lane_hold", 0.011, 0.015),
        (1, "claim_hold", 0.016, 0.017),
        (1, "lane_wait", 0.012, 0.0165),  # its own claim held it later: 0.5 ms before it
        (2, "flag_wait", 0.020, 0.024),  # nothing held the file meanwhile
        (2, "lane_wait", 0.030, 0.0300001),  # found it free at once: no hand-over
        (1, "lane_wait", 0.040, 0.042),  # waited for a writer no one logged
    ]
    found = handovers(spans, seconds=1.0)
    assert found["waits"] == 4
    assert found["handovers_per_s"] == 2.0 and found["unexplained_per_s"] == 1.0
    assert found["gap_ms"]["n"] == 2 and found["gap_ms"]["p50"] == 1.5  # 1 and 1.5 ms
    assert found["gap_ms"]["sum_s"] == 0.003
    assert found["held_s"] == 0.015
    # worker 1's wait from 12 ms to 16.5 ms was free from 15 to 16 ms, the last one free
    assert found["free_lane_wait_s"] == round(0.001 + 0.001 + 0.002, 3)
    assert found["free_flag_wait_s"] == 0.004
