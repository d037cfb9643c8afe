"""Job functions behind the workflow's rules, one module per concern.

Each takes a ``runner.Job`` and writes its outputs atomically; they hold no
logic of their own beyond wiring files and params to the modules that do the
work. Keeping them apart keeps each rule's code small: the workflow lists the
modules a rule's job imports as its inputs (``peftir.code``), so editing one
reruns the rules that use it and no others.
"""
