"""Operations on competitions, called by the routes, the demo and the job runner: one import for
the modules that hold them.

* :mod:`.access` - who is calling (an organiser's key, a participant's token);
* :mod:`.lifecycle` - create (labels, item ids, the public/private split), edit, data files, delete;
* :mod:`.membership` - invitations and participants;
* :mod:`.submissions` - upload and score, withdraw, exclude, select, leaderboard rows;
* :mod:`.runs` - aggregation runs as background jobs and what they store.

Everything that touches hidden data (labels, the split seed, private scores) happens in these
modules; what a caller may *see* is decided by :mod:`app.competitions.schemas`.
"""

from __future__ import annotations

from .access import (  # noqa: F401 - re-exported
    Caller,
    participant_by_token,
)
from .lifecycle import (  # noqa: F401 - re-exported
    FILE_NAME,
    JOIN_POLICIES,
    MAX_CLASSES,
    MAX_ITEMS,
    check_open,
    create_competition,
    delete_competition,
    edit_competition,
    get_competition,
    hidden_part,
    is_closed,
    item_ids,
    list_competitions,
    list_files,
    public_items,
    put_file,
    redefine_split,
)
from .membership import (  # noqa: F401 - re-exported
    MAX_INVITATIONS,
    invitations,
    invite,
    join,
    participants,
    revoke,
)
from .runs import (  # noqa: F401 - re-exported
    JOB_KIND,
    MAX_AGENTS,
    aggregation_predictions,
    beats_uniform,
    choose_submissions,
    get_aggregation,
    latest_aggregation,
    leaderboard_aggregation,
    new_aggregation,
    pin_aggregation,
    run_aggregation,
    start_aggregation,
    submission_map,
    usable_submissions,
)
from .submissions import (  # noqa: F401 - re-exported
    leaderboard_rows,
    list_submissions,
    own_submission,
    set_excluded,
    set_selected,
    shown_public,
    submissions_today,
    submit,
    withdraw,
)
