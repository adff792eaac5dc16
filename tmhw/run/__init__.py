"""Running a table on the machine: the per-op loop (``loop``), residency and eviction
(``pager``), and what is measured per iteration (``metrics``)."""
