"""What runs the workflow and no job computes: the job context of scripts, the warm worker, planning,
config validation and the report's landing page. Never part of a rule's code version."""
