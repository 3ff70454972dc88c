"""Competitions that aggregate their submissions (seed 000, section 2.7.3 and section 5.2): the
service's side.

:mod:`.parsing` reads submission files into a validation report, :mod:`.models` holds the tables,
:mod:`.schemas` the request/response bodies and views, :mod:`.service` the operations the routes
call (held by :mod:`.access`, :mod:`.lifecycle`, :mod:`.membership`, :mod:`.submissions` and
:mod:`.runs`), :mod:`.ratelimit` the per-address rate limit kept in the database. The numerical side (the split, Table 2.3, leaderboards, the aggregation of every pool) is the
library package :mod:`evaluation`.
"""
