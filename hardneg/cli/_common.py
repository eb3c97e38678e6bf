"""What every CLI command shares; for this round, the names below re-exported from where they now live.

Split by concern (issue 40 item 5):

- :mod:`._console`: the consoles, user errors and their one line, logging, progress and status lines;
- :mod:`._inputs`: input and output checks, id CSVs, split and tag arguments, stored and image queries;
- :mod:`._results`: the one writer of results (table, ``--json``, ``--csv``, ``--html``) and result rows;
- :mod:`._cluster`: ``--workers`` / ``--scheduler`` and the runner they give.

The command modules still import these names from here: a thin re-export kept so that
concurrent branches merge cleanly. Import from the modules above in new code; once the
imports are switched, this module goes.
"""

from __future__ import annotations

from hardneg.exceptions import CLIError  # defined there, re-exported here

from ._console import (  # noqa: F401
    console,
    err_console,
    error_line,
    escape,
    is_user_error,
    one_line,
    progress,
    ProgressLog,
    setup_logging,
    task_progress,
    task_status,
    USER_ERRORS,
)
from ._inputs import (  # noqa: F401
    check_index_current,
    check_input_file,
    check_output_dir,
    check_output_file,
    extract_query_images,
    in_split,
    is_same_store,
    item_info,
    read_id_csv,
    rows_of_ids,
    split_tags,
    stored_queries,
)
from ._results import (  # noqa: F401
    as_rows,
    check_result_outputs,
    emit_results,
    print_results,
    ranked_results,
    same_class,
    short_paths,
    write_csv,
    write_html,
)
from ._cluster import (  # noqa: F401
    cluster_options,
    cluster_runner,
)

__all__ = [
    "as_rows",
    "check_index_current",
    "check_input_file",
    "check_output_dir",
    "check_output_file",
    "check_result_outputs",
    "CLIError",
    "cluster_options",
    "cluster_runner",
    "console",
    "emit_results",
    "err_console",
    "error_line",
    "escape",
    "extract_query_images",
    "in_split",
    "is_same_store",
    "is_user_error",
    "item_info",
    "one_line",
    "print_results",
    "progress",
    "ProgressLog",
    "ranked_results",
    "read_id_csv",
    "rows_of_ids",
    "same_class",
    "setup_logging",
    "short_paths",
    "split_tags",
    "stored_queries",
    "task_progress",
    "task_status",
    "USER_ERRORS",
    "write_csv",
    "write_html",
]
