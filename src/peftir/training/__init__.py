"""Training machinery the systems share: checkpoints to resume (``checkpoint``), fixed-step training (``steps``),
validation during training (``validated``), MLM data and heads (``mlm``, ``mlm_head``) and passage groups."""
