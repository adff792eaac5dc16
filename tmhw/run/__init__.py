"""The executor in three parts: the per-op process (``loop``, whose ``Executor`` the
system builds), HBM residency and eviction (``pager``, the only writer of the per-page
state), and what is measured (``metrics``)."""
