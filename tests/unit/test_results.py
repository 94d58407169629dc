"""results: a GradingResult survives grading-result.json, the grader's notes on manual grades too."""
from attention_grading.results import CheckResult, GradingResult


def test_a_result_round_trips_through_json():
    """Every field, the checks as CheckResults, the manual grades kept and to confirm."""
    result = GradingResult("alice", "01", "graded", 6.0, 8.0,
                           checks=[CheckResult("a", "f", "hidden", 3.0, 3.0, "passed")],
                           first_failure="the grading process died", kept_manual=["q1"], changed_manual=["q2"])
    again = GradingResult.from_json(result.to_json())
    assert again == result and isinstance(again.checks[0], CheckResult)


def test_an_older_result_without_the_new_fields_still_reads():
    """A grading-result.json written before a field existed reads with its default."""
    again = GradingResult.from_json('{"student": "a", "lesson": "01", "status": "graded", "unknown": 1}')
    assert again.kept_manual == [] and again.changed_manual == []
