"""Competitions that aggregate their submissions (seed 000, section 2.7.3 and section 5.2).

Pure domain logic lives in :mod:`.scoring` (split, perplexity, Table 2.3 statistics),
:mod:`.parsing` (submission files and their validation report), :mod:`.leaderboard` (ranking) and
:mod:`.aggregation` (fitting every pool on the submissions). :mod:`.models` holds the tables,
:mod:`.schemas` the request/response bodies and :mod:`.service` the operations the routes call.
"""
