import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.prompts import prompt_diversity
from sampleaudit.metrics.vendi import vendi_score

N_PROMPTS, N_ANSWERS, D = 20, 5, 64


def _prompts():
    return [f"prompt {p}" for p in range(N_PROMPTS) for _ in range(N_ANSWERS)]


def test_same_answer_per_prompt_is_caught_though_diverse_overall():
    rng = np.random.default_rng(0)
    per_prompt = rng.normal(size=(N_PROMPTS, D))
    x = np.repeat(per_prompt, N_ANSWERS, axis=0) + rng.normal(size=(N_PROMPTS * N_ANSWERS, D)) * 0.01
    # Over the whole set the answers look diverse: Vendi close to the number of prompts.
    assert vendi_score(x) > 0.7 * N_PROMPTS
    res = prompt_diversity(x, _prompts())
    assert res.collapsed_prompt_share == 1.0 and res.mean_distinct_k == 1.0
    assert res.distinct_k_counts == {"1": N_PROMPTS}
    assert res.within_prompt_similarity > 0.99
    assert abs(res.across_prompt_similarity) < 0.1
    assert res.distinct_score == pytest.approx(1 / N_ANSWERS)


def test_diverse_answers():
    x = np.random.default_rng(1).normal(size=(N_PROMPTS * N_ANSWERS, D))
    res = prompt_diversity(x, _prompts())
    assert res.collapsed_prompt_share == 0.0 and res.distinct_score == 1.0
    assert res.distinct_k_counts == {str(N_ANSWERS): N_PROMPTS}
    assert abs(res.within_prompt_similarity) < 0.1


def test_hand_computed_case_and_listing():
    # Prompt "a": two identical answers and one orthogonal; prompt "b": three orthogonal answers.
    x = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]], float)
    res = prompt_diversity(x, ["a", "a", "a", "b", "b", "b"], ids=list("uvwxyz"), max_listed=1)
    assert res.n_prompts == 2 and res.n_answers == 6
    assert res.least_diverse[0].prompt == "a" and res.least_diverse[0].distinct_k == 2
    assert res.least_diverse[0].mean_similarity == pytest.approx(1 / 3)
    assert res.least_diverse[0].example_id in {"u", "v"}
    assert len(res.least_diverse) == 1
    # across: a's answers vs b's: only (w, z) match (1 pair out of 9)
    assert res.across_prompt_similarity == pytest.approx(1 / 9)
    assert res.distinct_k_counts == {"2": 1, "3": 1}


def test_single_answer_prompts_are_skipped_and_counted():
    x = np.random.default_rng(2).normal(size=(7, 8))
    res = prompt_diversity(x, ["a", "a", "a", "b", "c", "d", "d"])
    assert res.n_prompts == 2 and res.n_single_answer_prompts == 2 and res.n_answers == 5
    with pytest.raises(InputError, match="two or more answers"):
        prompt_diversity(x[:3], ["a", "b", "c"])


def test_one_prompt_has_no_across_value():
    res = prompt_diversity(np.eye(3), ["a"] * 3)
    assert res.across_prompt_similarity is None


def test_rejects_bad_input():
    with pytest.raises(InputError, match="one entry per"):
        prompt_diversity(np.eye(3), ["a", "a"])
    with pytest.raises(InputError, match="not a string"):
        prompt_diversity(np.eye(3), "aaa")
