"""Retrieval: how a question in a person's words finds its records and the passages that answer.

``search`` is the entry (its contract names the steps); ``pages`` the RS search answers,
``fused`` meaning and fewer words fused, ``evidence`` and ``passage_reads`` the passages read,
``body_search`` and ``linked_streams`` a record's linked long texts, ``threads`` a hit's thread,
``linked_hits`` a header folded into its body or part, ``hit_origin`` who sent
a hit and when, ``stream_hints`` the streams a question names, ``other_streams`` the streams a
page of guesses offers instead, ``order`` the page ordered by
one relevance judge (``question.relevance``).
"""
