"""Ten small programming tasks for the role-play benchmark, each with hidden unit tests.

The task text names the function and its behaviour; the tests are never shown to the agents.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodingTask:
    id: str
    task: str
    tests: str


TASKS = (
    CodingTask("fizzbuzz", "Write a Python function fizzbuzz(n) that returns a list of strings for 1..n: 'Fizz' for "
               "multiples of 3, 'Buzz' for multiples of 5, 'FizzBuzz' for both, otherwise the number as a string.",
               "assert fizzbuzz(5) == ['1', '2', 'Fizz', '4', 'Buzz']\nassert fizzbuzz(15)[-1] == 'FizzBuzz'\n"
               "assert fizzbuzz(0) == []"),
    CodingTask("palindrome", "Write a Python function is_palindrome(s) that says whether s reads the same backwards, "
               "ignoring case and every character that is not a letter or digit.",
               "assert is_palindrome('A man, a plan, a canal: Panama')\nassert not is_palindrome('hello')\n"
               "assert is_palindrome('')"),
    CodingTask("word_frequencies", "Write a Python function word_frequencies(text) that returns a dict mapping each "
               "lowercased word (runs of letters) to how often it occurs.",
               "assert word_frequencies('The cat and the hat.') == {'the': 2, 'cat': 1, 'and': 1, 'hat': 1}\n"
               "assert word_frequencies('') == {}"),
    CodingTask("roman", "Write a Python function to_roman(n) that converts an integer from 1 to 3999 to a Roman "
               "numeral string.",
               "assert to_roman(1) == 'I'\nassert to_roman(4) == 'IV'\nassert to_roman(1994) == 'MCMXCIV'\n"
               "assert to_roman(3999) == 'MMMCMXCIX'"),
    CodingTask("merge_intervals", "Write a Python function merge_intervals(intervals) that takes a list of [start, "
               "end] pairs and returns the merged, sorted list of overlapping intervals as lists.",
               "assert merge_intervals([[1, 3], [2, 6], [8, 10]]) == [[1, 6], [8, 10]]\n"
               "assert merge_intervals([[5, 7], [1, 2]]) == [[1, 2], [5, 7]]\nassert merge_intervals([]) == []\n"
               "assert merge_intervals([[1, 4], [4, 5]]) == [[1, 5]]"),
    CodingTask("flatten", "Write a Python function flatten(nested) that turns arbitrarily nested lists into one flat "
               "list, keeping the order.",
               "assert flatten([1, [2, [3, [4]]], 5]) == [1, 2, 3, 4, 5]\nassert flatten([]) == []\n"
               "assert flatten([[], [[]]]) == []"),
    CodingTask("run_length", "Write a Python function run_length_encode(s) that encodes runs of equal characters as "
               "the character followed by the run length, e.g. 'aaabcc' becomes 'a3b1c2'.",
               "assert run_length_encode('aaabcc') == 'a3b1c2'\nassert run_length_encode('') == ''\n"
               "assert run_length_encode('abc') == 'a1b1c1'"),
    CodingTask("balanced", "Write a Python function balanced(s) that says whether the brackets (), [] and {} in s are "
               "balanced and properly nested; other characters are ignored.",
               "assert balanced('([]{})')\nassert not balanced('([)]')\nassert balanced('a(b)c')\n"
               "assert not balanced('((')"),
    CodingTask("second_largest", "Write a Python function second_largest(numbers) that returns the second largest "
               "distinct value in a list of integers, or None if there is none.",
               "assert second_largest([3, 1, 4, 4]) == 3\nassert second_largest([7]) is None\n"
               "assert second_largest([2, 2]) is None\nassert second_largest([-1, -5]) == -5"),
    CodingTask("transpose", "Write a Python function transpose(matrix) that returns the transpose of a rectangular "
               "list of lists.",
               "assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]\nassert transpose([]) == []\n"
               "assert transpose([[1]]) == [[1]]"),
)
