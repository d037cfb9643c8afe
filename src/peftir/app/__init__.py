"""The application on top of every system: the ``peftir`` command (``cli``), the audit that traces each table
cell back to its runs (``audit``, ``rescore``) and the Workflow Run RO-Crates (``crate``)."""
